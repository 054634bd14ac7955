package proofs_test

import (
	"slices"
	"testing"
	"time"

	"github.com/narrowd/narrowd/parse"
	"github.com/narrowd/narrowd/proofs"
	"github.com/narrowd/narrowd/rules"
)

// BenchmarkCorpusParseNarrow times parse + narrow of every corpus command
// on its own and reports the median and p99 per command (ns), the figures
// the issue targets (50 µs and 500 µs).
func BenchmarkCorpusParseNarrow(b *testing.B) {
	entries := loadCorpus(b)
	k, err := parse.DefaultKnowledge()
	if err != nil {
		b.Fatal(err)
	}
	ps := proofs.NewPaths([]string{corpusRoot}, nil, nil)
	ceiling := rules.MaxLabels()
	durations := make([]time.Duration, 0, len(entries)*b.N)
	b.ResetTimer()
	for b.Loop() {
		for _, e := range entries {
			start := time.Now()
			ev := proofs.Shell(parse.Analyze(e.Command, k), corpusRoot, ps)
			_ = proofs.Narrow(ceiling, ev)
			durations = append(durations, time.Since(start))
		}
	}
	reportPercentiles(b, durations)
}

// BenchmarkCorpusJudge times the whole pipeline (catalog, parse, proofs,
// narrowing, profile, ceiling outcome) per corpus command.
func BenchmarkCorpusJudge(b *testing.B) {
	entries := loadCorpus(b)
	eng := corpusEngine(b)
	calls := make([]rules.Call, len(entries))
	for i, e := range entries {
		calls[i] = corpusCall(e.Command)
	}
	durations := make([]time.Duration, 0, len(entries)*b.N)
	b.ResetTimer()
	for b.Loop() {
		for _, c := range calls {
			start := time.Now()
			_ = eng.Judge(c, rules.Session{})
			durations = append(durations, time.Since(start))
		}
	}
	reportPercentiles(b, durations)
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), "p50-ns/cmd")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds()), "p99-ns/cmd")
	b.ReportMetric(0, "ns/op")
}

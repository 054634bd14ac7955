package proofs

import (
	"path/filepath"

	"github.com/narrowd/narrowd/rules"
)

// MCPTool gathers the evidence for one call of a labelled MCP tool, from
// the arguments its label record names (the record's input: kind and
// field, and dir for a search root). A tool whose record names none keeps
// its ceiling: narrowd never guesses which argument is a path from its
// name.
//
// An MCP server resolves a relative path against its own working
// directory, which the agent chose when it started the server and which
// no hook carries. So only an absolute path can be proven inside the
// workspace (§4.3); a relative, missing or non-string one keeps the
// ceiling. URLs narrow nothing, as for the agents' own fetch tools.
func MCPTool(spec rules.InputSpec, input map[string]any, ps Paths) []rules.Evidence {
	var fields []string
	switch spec.Kind {
	case rules.InputRead, rules.InputWrite, rules.InputEdit, rules.InputDelete, rules.InputList:
		fields = []string{spec.Field}
	case rules.InputGlob, rules.InputGrep:
		fields = []string{spec.Dir}
	case rules.InputFetch:
		return Tool(spec, input, "/", ps)
	default:
		// Shell text and patches name paths relative to a directory
		// the server chose; nothing to prove.
		return []rules.Evidence{{Kind: rules.KindNoNarrowing, Strength: rules.Proven, Subject: spec.Kind,
			Detail: "narrowd reads nothing from this MCP tool's arguments", Effect: effectNone}}
	}
	for _, f := range fields {
		p, ok := input[f].(string)
		if f == "" || !ok || !filepath.IsAbs(p) {
			return []rules.Evidence{{Kind: rules.KindPathNotAbsolute, Strength: rules.Proven, Subject: f,
				Detail: "an MCP server resolves a path that is missing or relative against its own working directory, which narrowd does not know", Effect: effectNone}}
		}
	}
	// Every path is absolute, so the cwd plays no part.
	return Tool(spec, input, "/", ps)
}

package rules

import "strings"

// Risk classes of seed 004 that [RiskClass] returns, plus "unlabelled" for
// a tool nobody labelled. compute_only and draft_only are seed 004 classes
// too, but the labels cannot tell them apart from read_only and
// write_local, so RiskClass never returns them.
var riskClasses = [...]string{
	"unlabelled",
	"read_only",
	"search_only",
	"write_local",
	"write_internal",
	"write_external",
	"communication",
	"financial",
	"identity_access",
	"security_sensitive",
	"process_execution",
	"network_open_world",
	"destructive",
	"privileged_admin",
}

// RiskClass returns the seed 004 risk class of a call with labels l made
// through the tool named tool. The class is a summary for records and
// dashboards; profiles should decide on the labels themselves, because a
// class is not ordered by risk. The first matching row wins:
//
//	 #  labels                                                    class
//	 1  l == nil                                                  unlabelled
//	 2  open_world, mutation ≠ read, egress = external             process_execution  (a shell, code runner or browser at its domain ceiling)
//	 3  financial = direct                                        financial
//	 4  mutation = read, egress = external                         network_open_world (fetch or search any URL)
//	 5  mutation = read, tool name says search/grep/glob/find       search_only
//	 6  mutation = read                                           read_only
//	 7  configuration_object                                      security_sensitive (removes a policy, role, filter…)
//	 8  pure_deletion, or mutation = delete with irreversible
//	    and scope ≥ bulk                                          destructive
//	 9  scope = account_wide, tool name says user/role/permission… identity_access
//	10  scope = account_wide, not open_world                       privileged_admin
//	11  egress = external, mutation = create                      communication
//	12  egress = external                                         write_external
//	13  egress = internal                                         write_internal
//	14  otherwise (a change that sends nothing anywhere)          write_local
//
// The tool name only chooses between classes that the labels leave equally
// risky (search_only or read_only; identity_access or privileged_admin). It
// never makes a call look less risky than its labels.
func RiskClass(l *Labels, tool string) string {
	if l == nil {
		return "unlabelled"
	}
	read := l.Levels[Mutation] == 0
	switch {
	case l.Facts[OpenWorld] && !read && l.Levels[Egress] == Egress.Max():
		return "process_execution"
	case l.Levels[Financial] == Financial.Max():
		return "financial"
	case read && l.Levels[Egress] == Egress.Max():
		return "network_open_world"
	case read && nameHas(tool, searchWords):
		return "search_only"
	case read:
		return "read_only"
	case l.Facts[ConfigurationObject]:
		return "security_sensitive"
	case l.Facts[PureDeletion],
		l.Levels[Mutation] == Mutation.Max() && l.Levels[Reversibility] == Reversibility.Max() && l.Levels[Scope] > 0:
		return "destructive"
	case l.Levels[Scope] == Scope.Max() && nameHas(tool, identityWords):
		return "identity_access"
	case l.Levels[Scope] == Scope.Max() && !l.Facts[OpenWorld]:
		return "privileged_admin"
	case l.Levels[Egress] == Egress.Max() && l.Levels[Mutation] == 1:
		return "communication"
	case l.Levels[Egress] == Egress.Max():
		return "write_external"
	case l.Levels[Egress] == 1:
		return "write_internal"
	}
	return "write_local"
}

// searchWords and identityWords are the tool-name hints of [RiskClass].
var (
	searchWords   = []string{"search", "grep", "glob", "find"}
	identityWords = []string{"user", "member", "role", "permission", "grant", "invite", "auth", "token", "credential", "password", "apikey", "api_key", "iam", "acl", "sso"}
)

func nameHas(tool string, words []string) bool {
	t := strings.ToLower(tool)
	for _, w := range words {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

// The five seed 003 labels (Nanny's portable tool labels), as profiles and
// [Session.Called] name them.
const (
	markReadsUntrusted = "reads_untrusted"
	markExternalEffect = "external_effect"
	markDestructive    = "destructive"
	markMovesMoney     = "moves_money"
	markReadsSensitive = "reads_sensitive"
)

var sessionMarks = [...]string{markReadsUntrusted, markExternalEffect, markDestructive, markMovesMoney, markReadsSensitive}

// SessionLabels returns the seed 003 labels a call carries, for the
// session history in [Session.Called]. It derives them from the narrowed
// labels l and the call's evidence:
//
//   - reads_untrusted: returns_class is third_party_content;
//   - external_effect: egress is external, or the call changes state
//     (mutation ≠ read) and egress is not none;
//   - destructive: mutation is delete and the change is irreversible or a
//     pure deletion. Sending is not destruction: external_effect covers it;
//   - moves_money: financial is direct;
//   - reads_sensitive: some evidence has a kind starting with "sensitive"
//     (such as "sensitive-name"), whatever its strength, since it only
//     raises.
//
// An unlabelled call (l == nil) carries all five: nobody said what it did,
// and unknown never counts as clean.
func SessionLabels(l *Labels, evidence []Evidence) []string {
	if l == nil {
		return append([]string(nil), sessionMarks[:]...)
	}
	var out []string
	for _, m := range sessionMarks {
		if carries(l, evidence, m) {
			out = append(out, m)
		}
	}
	return out
}

// carries reports whether a call with labels l and evidence ev carries the
// seed 003 label mark. l must not be nil.
func carries(l *Labels, ev []Evidence, mark string) bool {
	switch mark {
	case markReadsUntrusted:
		return l.Levels[ReturnsClass] == ReturnsClass.Max()
	case markExternalEffect:
		return l.Levels[Egress] == Egress.Max() || (l.Levels[Mutation] > 0 && l.Levels[Egress] > 0)
	case markDestructive:
		return l.Levels[Mutation] == Mutation.Max() && (l.Levels[Reversibility] == Reversibility.Max() || l.Facts[PureDeletion])
	case markMovesMoney:
		return l.Levels[Financial] == Financial.Max()
	case markReadsSensitive:
		return readsSensitive(ev)
	}
	return false
}

func readsSensitive(ev []Evidence) bool {
	for i := range ev {
		if strings.HasPrefix(string(ev[i].Kind), "sensitive") {
			return true
		}
	}
	return false
}

func isSessionMark(s string) bool {
	for _, m := range sessionMarks {
		if m == s {
			return true
		}
	}
	return false
}

// Consequence classes of seed 001, least remedy last. They order how much
// of the world can still be put back, not how bad the act is.
var consequenceNames = [...]string{"reversible", "compensatable", "forward_recoverable", "irreversible"}

// consequence maps the reversibility label onto seed 001's classes:
// reversible → reversible, reversible_with_effort → compensatable,
// irreversible → irreversible. No label maps to forward_recoverable.
func consequence(l *Labels) int {
	switch l.Levels[Reversibility] {
	case 0:
		return 0
	case 1:
		return 1
	}
	return 3
}

func parseConsequence(s string) (int, bool) {
	for i, n := range consequenceNames {
		if n == s {
			return i, true
		}
	}
	return 0, false
}

// Package proofs turns what narrowd knows about one call into evidence
// records with a strength, and narrows labels on that evidence alone:
// only downward, and only on proven or established evidence (spec §5).
// Path proofs are lexical; what it reads on disk (symlinks, hard links)
// and what names suggest (sensitive files) can only raise.
//
// It never runs a program or opens a socket. Its API is not stable.
package proofs

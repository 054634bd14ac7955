// Package rules is narrowd's label model: the six labels and facts of the
// Agent Action Labels spec, def_hash, the catalog of built-in agent tools,
// the evidence and decision types, and profiles (TOML rules with CEL
// conditions) that turn narrowed labels into allow, ask, deny or sandbox.
//
// It reads only its own embedded files and the bytes it is given. It never
// opens a socket, runs a program or exports metrics. Its API is not stable.
package rules

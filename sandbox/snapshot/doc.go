// Package snapshot is narrowd's own store of file copies (spec §5 rule 4):
// before a call that overwrites or deletes workspace files is allowed, the
// daemon copies the targets here, and `narrowd undo` puts them back.
//
// The store is content-addressed: objects/<sha256[:2]>/<sha256>, each the
// bytes of one file as read at check time, hashed from the copy itself
// (the source may change while it is copied), 0400. A copy is a reflink
// (FICLONE) when the store and the file share a file system that allows
// it, else a plain copy. index/<id>.json lists what one call's snapshot
// holds, keyed by the audit record's id.
//
// Every target is opened beneath its workspace root with openat2
// (RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS, O_NOFOLLOW): a symlink anywhere
// on the way, a file with more than one hard link, anything that is not a
// regular file, or a copy over the size budget is refused, and the caller
// must then give no evidence. Restores go through the same kind of
// directory handle and replace the path with rename, so a symlink planted
// after the check is replaced, never written through.
//
// The same uid can still delete or rewrite the store: a restore re-hashes
// every object first and refuses when one no longer matches.
//
// A snapshot can also hold a sandboxed run's change set (runs.go, issue
// 16): the sandbox writes an overlay whose upper layer is in the store
// (runs/<id>/<n>), and after the run [Store.FinishRun] moves the
// originals it replaces into sets/<id>/<n> (a tree is one rename on the
// workspace's file system) and the run's files into the workspace, all
// or nothing, with package changes. A run over its budget, or one that
// changed a path something else changed meanwhile, stays pending until
// [Store.ApplyRun] or [Store.DiscardRun]. [Store.Restore] undoes an
// applied run, keeping what it replaces as a new snapshot.
package snapshot

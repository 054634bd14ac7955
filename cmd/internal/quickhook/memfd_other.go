//go:build !amd64 && !arm64

package quickhook

// sysMemfdCreate is unknown here: the payload goes to a temporary file.
const sysMemfdCreate = -1

//go:build !linux

package sandbox

import "os"

// Sandbox is not available off Linux.
type Sandbox struct{}

// Start fails: narrowd's sandbox needs Linux.
func Start(string, Spec) (*Sandbox, error) { return nil, ErrUnsupported }

// RunStage fails: narrowd's sandbox needs Linux.
func RunStage(string) error { return ErrUnsupported }

// Verify fails: narrowd's sandbox needs Linux.
func Verify(int, int, Expect, ...string) (Facts, error) { return Facts{}, ErrUnsupported }

// ExpectFor fails: narrowd's sandbox needs Linux.
func ExpectFor([]string, []string, []string) (Expect, error) { return Expect{}, ErrUnsupported }

// SameExecutable fails: narrowd's sandbox needs Linux.
func SameExecutable(int, ...string) error { return ErrUnsupported }

// LandlockABI is 0 off Linux.
func LandlockABI() int { return 0 }

func (*Sandbox) Ready() Ready         { return Ready{} }
func (*Sandbox) Tmp() string          { return "" }
func (*Sandbox) Release(string) error { return ErrUnsupported }
func (*Sandbox) Signal(os.Signal)     {}
func (*Sandbox) Wait() (int, error)   { return 1, ErrUnsupported }
func (*Sandbox) Abort()               {}

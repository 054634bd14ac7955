package main

import (
	"context"
	"errors"
)

var errNotBuilt = errors.New("not built yet")

func runServe(ctx context.Context, e env, args []string) error  { return errNotBuilt }
func runHook(ctx context.Context, e env, args []string) error   { return errNotBuilt }
func runLog(ctx context.Context, e env, args []string) error    { return errNotBuilt }
func runStats(ctx context.Context, e env, args []string) error  { return errNotBuilt }
func runStatus(ctx context.Context, e env, args []string) error { return errNotBuilt }

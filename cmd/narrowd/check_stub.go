package main

import "context"

func runCheck(ctx context.Context, e env, args []string) error   { return errNotBuilt }
func runExplain(ctx context.Context, e env, args []string) error { return errNotBuilt }
func runProfile(ctx context.Context, e env, args []string) error { return errNotBuilt }

package main

import "errors"

var errNotBuilt = errors.New("not built yet")

//go:build !invariants

package main

const serverTags = ""

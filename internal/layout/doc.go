// Package layout has no code: its test checks the package layout's rules
// on the module's import graph (see layout_test.go and docs/architecture.md).
package layout

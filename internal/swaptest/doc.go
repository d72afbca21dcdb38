// Package swaptest plays, in tests, the sandboxed command that races keel's file tools: it
// exchanges two names — a file and a symbolic link — in a tight loop (renameat2
// RENAME_EXCHANGE), so that whoever resolves or opens one of them by path sees either at any
// moment. Linux only; tests that use it are _linux_test.go files.
package swaptest

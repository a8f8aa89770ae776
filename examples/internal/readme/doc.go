// Package readme holds the test that keeps the repository's README.md true:
// every Go block in it is the body of an Example function, with its output,
// that go test runs, and every go run command in it names a program.
package readme

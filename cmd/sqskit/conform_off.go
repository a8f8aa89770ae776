//go:build !sqstestcheck

package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newConformCmd stands in for conform.go until sqstest.Check (the suite's
// runner without go test) is in main: build with -tags sqstestcheck for
// the real command. Delete this file once it is.
func newConformCmd(*app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "conform",
		Short: "Run sqstest's conformance cases against an SQS endpoint (not in this build)",
		Long: `conform runs sqstest's cases against an endpoint and prints passed, skipped
(with reason) and failed cases. This build lacks it: it needs sqstest.Check,
which is not yet in the library it was built with (build with
-tags sqstestcheck once it is). Meanwhile: go test -run TestConformanceEndpoint ./sqstest/`,
		Example: `  sqskit conform --endpoint-url http://127.0.0.1:9324 --known-gaps fauxqs`,
		Args:    noArgs,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("conform is not in this build: it needs sqstest.Check (build with -tags sqstestcheck)")
		},
	}
	// The real command's flags, so that a script gets the reason above
	// rather than an unknown flag.
	cmd.Flags().String("known-gaps", "", "skip a backend's known failures, with reasons: fauxqs")
	cmd.Flags().String("prefix", "sqskit-conform-", "start of the name of every queue the suite creates")
	return cmd
}

package main

import "github.com/spf13/cobra"

func newRedriveCmd(a *app) *cobra.Command { return &cobra.Command{Use: "redrive"} }

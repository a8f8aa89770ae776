package sqsfake_test

import (
	"testing"

	"github.com/sqskit/sqskit/sqstest"
)

func TestConformance(t *testing.T) {
	sqstest.Run(t, sqstest.NewFakeHarness())
}

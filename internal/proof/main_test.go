package proof

import (
	"testing"

	"go.uber.org/goleak"
)

// The soaks, the crash soak and the bad-input catalogue start consumers,
// replayers, batchers and HTTP servers: none may leave a goroutine behind.
// One exception: net/http keeps a connection's goroutine for 500 ms after
// its server refused a request body as too large (closeWriteAndWait, so the
// client reads the answer before the reset), past sqsfake's HTTPServer.Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("net/http.(*conn).closeWriteAndWait"))
}

package replay

// scope is the instrumentation scope of this package's metrics.
const scope = "github.com/sqskit/sqskit/replay"

// Package backoff provides retry delay strategies with jitter, done right,
// and drop-in compatible with github.com/cenkalti/backoff/v4.
//
// # Two faces
//
// A Strategy is a pure function: Delay(attempt, prev) returns the delay
// before retry number attempt (0 for the first), or Stop. Nothing is kept in
// memory, so the attempt count can live in an SQS message attribute (replay)
// or in ApproximateReceiveCount (consumer), and one Strategy value serves many
// goroutines. prev, the previous delay, is read only by DecorrelatedJitter,
// whose next delay grows from the last one; callers that keep nothing pass 0.
//
// An Iterator walks a Strategy for one retry loop (NextBackOff, Reset) and
// satisfies cenkalti's BackOff interface, so any strategy plugs into
// cenkalti's Retry; FromBackOff goes the other way, turning any cenkalti
// BackOff into a Strategy.
//
// # Which strategy
//
// Use FullJitter, U(0, min(cap, base·2^attempt)), unless you have a reason
// not to. In a simulation of Brooker's experiment (N clients racing to update
// one row with optimistic concurrency, 100 runs per point; see
// TestSimulationReproducesBrooker), at 190 clients:
//
//	strategy                 writes   time to finish
//	no backoff                8,007       3.5 s   work grows as N²
//	exponential, no jitter    5,150     100.9 s   clients collide forever
//	full jitter               1,774       7.4 s   least work
//	equal jitter              1,761       9.4 s   same work, slower
//	decorrelated jitter       2,439       6.9 s   faster, 37% more work
//	decorrelated, literal     2,440       7.9 s   piles up at the cap
//
// Pick DecorrelatedJitter when finishing sooner matters more than load on
// the server; EqualJitter when a retry must never come too soon (it waits at
// least half the exponential delay). Exponential without jitter suits only a
// lone caller. DecorrelatedJitterV2 is Polly's smooth curve; Randomized is
// cenkalti's algorithm with the cap applied after randomising.
//
// # Guarantees
//
//   - The cap is real: jitter is drawn inside it, so no delay exceeds Cap
//     (cenkalti v4 applies MaxInterval before randomising, and delays reach
//     1.5× it).
//   - No overflow: every attempt number up to MaxInt and every cap up to
//     MaxInt64 give a delay in [0, Cap] (cenkalti v4 returns negative delays
//     when MaxInterval is very large). Zero Cap means no cap.
//   - Randomness is per value: set Rand to NewRandom(seed) for repeatable
//     delays in tests; nil uses math/rand/v2's lock-free global source. No
//     strategy reads the clock.
//   - Strategies are safe for concurrent use (with a Rand that is; NewRandom's
//     is). An Iterator is not: give each loop its own.
//
// # Decorators and helpers
//
// MaxAttempts and Capped wrap any strategy. Iterator.WithMaxElapsed stops a
// loop after a time budget that does not count work the caller reports with
// Worked (a long poll that returned messages). ByError picks a longer
// strategy for throttling errors (SQS RequestThrottled, ThrottlingException,
// KmsThrottled, HTTP 429) and honours a server's Retry-After, clamped.
// Budgeted draws every retry from a shared token Budget and returns Stop when
// it is empty: jitter spreads retries out, a budget bounds how many there
// are. Retry runs an operation with a strategy, stops at a Permanent error or
// when ctx is done, and never leaks a timer.
//
// # Errors
//
// Invalid settings (negative durations, Cap below Base, a jitter factor
// outside [0, 1]) are reported by Validate as *ConfigError; Delay itself
// never panics and never returns a negative delay other than Stop. Retry
// returns a *ConfigError, without calling op, for a nil strategy or op and
// for a strategy Validate refuses.
//
// # Testing
//
// Retry waits on the time package's clock: run code that retries inside a
// testing/synctest bubble and its waits take no real time.
package backoff

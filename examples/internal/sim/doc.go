// Package sim runs the examples' stories on simulated time: sqsfake reads a
// Clock that stands still while the consumers and replayers work, and a
// Driver moves it to the next moment anything is due (a delay ends, a
// visibility timeout lapses, a long poll ends) once they are all waiting.
// Minutes of queue time pass in milliseconds, and no example sleeps.
//
// The library code itself reads the machine's clock, as it would beside
// real SQS; only the queues' time is simulated. A Probe, added to each SQS
// client as SDK middleware, tells the Driver when every call has ended and
// every long poll is parked on the Clock.
package sim

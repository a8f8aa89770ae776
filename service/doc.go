// Package service runs a service's SQS components under one lifecycle:
// consumers on several queues, replayers and senders start together, stop
// together in order on SIGTERM or at the first failure, and end in one
// error that names the component at fault. A [Budget] shares one number of
// handler slots among several consumers by weight.
//
// # How do I …
//
//   - run consumers, a replayer and a Batcher until SIGTERM: [Run] with
//     [Components], below.
//   - bound the time from SIGTERM to exit: [Options.GracePeriod].
//   - know which component failed: errors.As the error to a
//     [*ComponentError]; [ErrGracePeriodOver] marks one left behind.
//   - run something else with them (an HTTP server, a poller): give it a
//     Run(ctx) error method that returns once ctx is done; see [Runner].
//   - share handler slots among consumers by weight: [NewBudget], then
//     [Budget.Share] per consumer.
//
// # Running a service
//
//	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
//	defer stop()
//	err := service.Run(ctx, service.Components{
//		Runners: map[string]service.Runner{"orders": orders, "refunds": refunds, "replay": replayer},
//		Closers: map[string]service.Closer{"ledger": ledgerBatcher},
//	})
//
// orders and refunds are consumer.Consumer values, replayer a
// replay.Replayer, ledgerBatcher a fifo.Batcher the consumers' handlers
// send through. On SIGTERM every Runner stops receiving at once, each
// Consumer finishes or releases its in-flight messages, and only then is
// the Batcher closed, so what the handlers handed it is sent; [Run] states
// the order and the error.
//
// # Fitting Kubernetes' grace period
//
// Kubernetes sends SIGTERM and, 30 s later by default
// (terminationGracePeriodSeconds), SIGKILL. [Options.GracePeriod] bounds
// Run from SIGTERM to return: 25 s by default, 5 s short of Kubernetes'
// default. Within it, a Consumer takes up to its ShutdownTimeout + 1 s (21 s
// with its default) and the Closers get what remains. Keep every
// ShutdownTimeout at least 2 s below GracePeriod, and GracePeriod below
// the pod's terminationGracePeriodSeconds, minus any preStop hook's time.
//
// # Sharing handler slots
//
// Two consumers with their own Concurrency each may both run at full
// concurrency and overload what their handlers call; one Concurrency for
// both lets a busy queue starve a quiet one. A [Budget] bounds their sum
// and gives each [Share] a guaranteed part by weight:
//
//	budget := service.NewBudget(32)
//	orders, err := consumer.New(client, ordersURL, handleOrder, func(o *consumer.Options) {
//		o.Budget = budget.Share(3) // 24 slots guaranteed
//	})
//	refunds, err := consumer.New(client, refundsURL, handleRefund, func(o *consumer.Options) {
//		o.Budget = budget.Share(1) // 8 slots guaranteed
//	})
//
// Each consumer still needs a Concurrency at least as large as the slots it
// may take. What a Share is guaranteed and when it may borrow is on
// [Budget].
package service

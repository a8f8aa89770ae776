package consumer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/sqskit/sqskit/consumer"
	"github.com/sqskit/sqskit/handler"
	"github.com/sqskit/sqskit/sqsfake"
)

// Health serves /livez and /readyz for a service's consumers on its own
// mux; Pause stops intake (here before Run, which then starts paused) and
// Status says who holds it.
func ExampleHealth() {
	client := sqsfake.New().Client()
	q, _ := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	c, err := consumer.New(client, *q.QueueUrl, func(context.Context, *handler.Message) error { return nil })
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/health/", http.StripPrefix("/health", consumer.Health(c)))

	c.Pause("operator")
	for _, path := range []string{"/health/livez", "/health/readyz"} {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Print(w.Code, " ", w.Body.String())
	}
	fmt.Println(c.Status().PausedBy)
	// Output:
	// 200 orders not started live
	// 503 orders not started not ready: not started
	// [operator]
}

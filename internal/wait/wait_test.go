package wait

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestSleepWaitsTheFullDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !Sleep(context.Background(), 3*time.Second) || time.Since(start) != 3*time.Second {
			t.Fatalf("expect a full 3 s wait, got %v", time.Since(start))
		}
	})
}

func TestSleepEndsWhenCtxIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		if Sleep(ctx, time.Hour) || time.Since(start) != time.Second {
			t.Fatalf("expect the wait cut at 1 s, got %v", time.Since(start))
		}
	})
}

func TestSleepOfNothingReportsWhetherCtxIsLive(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if !Sleep(ctx, 0) || !Sleep(ctx, -time.Second) {
		t.Error("expect a zero or negative wait to pass at once on a live ctx")
	}
	cancel()
	if Sleep(ctx, 0) {
		t.Error("expect a zero wait to report a done ctx")
	}
}

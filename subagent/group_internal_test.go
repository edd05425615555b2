package subagent

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/avaagent/ava/agent"
)

func budgetGroup(cents float64) *Group {
	return &Group{budget: cents, freed: make(chan struct{})}
}

// Many members reserving and settling at once never spend more than the
// group's budget together, and every one is either granted or refused.
func TestGroupReserveNeverExceedsTheBudget(t *testing.T) {
	g := budgetGroup(10)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			for {
				granted, settle, err := g.Reserve(context.Background(), 0.7, 0.2)
				if err != nil {
					if !errors.Is(err, agent.ErrCostExceeded) {
						t.Errorf("refusal %v", err)
					}
					return
				}
				if granted < 0.2 || granted > 0.7 {
					t.Errorf("granted %.4f, want 0.2 to 0.7", granted)
				}
				settle(granted * 0.9) // a call spends most of what it may
			}
		})
	}
	wg.Wait()
	if g.spent > 10 || g.spent < 9.8 || g.reserved > 1e-9 {
		t.Fatalf("spent %.4f¢ reserved %.4f¢ of 10¢", g.spent, g.reserved)
	}
}

// A call that wants more than is left waits while others hold
// reservations, and gets all it wants once they settle cheaply.
func TestGroupReserveWaitsForReservationsToSettle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := budgetGroup(10)
		_, settleA, err := g.Reserve(context.Background(), 8, 1)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan float64)
		go func() {
			granted, settle, err := g.Reserve(context.Background(), 8, 1)
			if err != nil {
				t.Error(err)
			}
			settle(0)
			got <- granted
		}()
		synctest.Wait() // the second call is blocked: granted, or waiting
		select {
		case g := <-got:
			t.Fatalf("granted %.1f¢ while 8¢ of 10¢ were reserved: it must wait", g)
		default:
		}
		settleA(1)
		settleA(5) // a second settle does nothing
		if granted := <-got; granted != 8 {
			t.Fatalf("granted %.1f¢ after A settled at 1¢, want 8", granted)
		}
		if g.spent != 1 {
			t.Fatalf("spent %.1f¢, want 1 (settle counts once)", g.spent)
		}
	})
}

func TestGroupReserveWaitEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := budgetGroup(10)
		_, settle, _ := g.Reserve(context.Background(), 10, 1)
		defer settle(0)
		ctx, cancel := context.WithCancelCause(context.Background())
		cause := errors.New("member cancelled")
		time.AfterFunc(10*time.Millisecond, func() { cancel(cause) })
		if _, _, err := g.Reserve(ctx, 5, 1); !errors.Is(err, cause) {
			t.Fatalf("err %v, want the context's cause", err)
		}
	})
}

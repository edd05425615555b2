package lazyre

import "testing"

// TestCompiledOnceAtFirstUse: a bad pattern panics at its first use, not
// at New; a good one compiles once.
func TestCompiledOnceAtFirstUse(t *testing.T) {
	bad := New(`(`)
	re := New(`^a+$`)
	if re() != re() || !re().MatchString("aaa") {
		t.Fatal("not one compiled expression")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a bad pattern did not panic at its first use")
		}
	}()
	bad()
}

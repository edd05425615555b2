package sandbox

import (
	"testing"

	"golang.org/x/net/bpf"
)

// The filter assembles, and every jump lands inside it.
func TestSeccompProgramAssembles(t *testing.T) {
	prog, err := seccompProgram()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bpf.Assemble(prog); err != nil {
		t.Fatal(err)
	}
	for i, ins := range prog {
		if j, ok := ins.(bpf.JumpIf); ok && i+1+int(j.SkipTrue) >= len(prog) {
			t.Fatalf("instruction %d jumps past the end", i)
		}
	}
}

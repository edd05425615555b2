package llm

import (
	"encoding/json"
	"fmt"
)

// blockFields is Block without its JSON methods, so they can reuse the
// default encoding.
type blockFields Block

// MarshalJSON encodes the block. A tool call whose arguments are not
// valid JSON (a model can send anything) cannot go in "input", which holds
// raw JSON; its arguments are kept as received, as a string in
// "input_raw", so that a conversation holding such a call can always be
// stored and resumed.
func (b Block) MarshalJSON() ([]byte, error) {
	if len(b.Input) == 0 || json.Valid(b.Input) {
		return json.Marshal(blockFields(b))
	}
	return json.Marshal(struct {
		blockFields
		// Input shadows the embedded field so that it is left out.
		Input    json.RawMessage `json:"input,omitempty"`
		InputRaw string          `json:"input_raw"`
	}{blockFields: blockFields(b), InputRaw: string(b.Input)})
}

// UnmarshalJSON decodes a block written by MarshalJSON: "input_raw",
// when present, becomes Input exactly as the model sent it.
func (b *Block) UnmarshalJSON(data []byte) error {
	var aux struct {
		blockFields
		InputRaw *string `json:"input_raw"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return fmt.Errorf("decode message block: %w", err)
	}
	*b = Block(aux.blockFields)
	if aux.InputRaw != nil {
		b.Input = json.RawMessage(*aux.InputRaw)
	}
	return nil
}

package openai

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/avaagent/ava/llm"
)

// OpenAI's web search runs through the Responses API (POST /responses),
// not chat completions: a request that offers the provider's search
// (llm.Request.ServerTools) to an endpoint configured as OpenAI's own
// (Config.ServerSearch == SearchResponses) is sent there, with the tool
// {"type":"web_search"} beside the function tools. The answer is a list
// of output items: web_search_call (the model's query, run by OpenAI),
// reasoning, message (output_text parts whose url_citation annotations
// cite the pages) and function_call. Every item goes back on the next
// turn exactly as it came: Ava keeps each as the raw JSON the API sent
// (llm.Block.Raw, Provider "openai"), as it does Anthropic's blocks.

// responseItem is the part of an output item Ava reads; the item itself
// is kept raw.
type responseItem struct {
	Type    string            `json:"type"`
	ID      string            `json:"id"`
	Status  string            `json:"status"`
	Content []json.RawMessage `json:"content"`
	// function_call
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// web_search_call
	Action *searchAction `json:"action"`
	// reasoning
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// searchAction is a web_search_call's action: a search (query), a page
// opened (url) or a pattern found in one (pattern, url), and the pages
// the search consulted when asked for (include
// web_search_call.action.sources).
type searchAction struct {
	Type  string `json:"type"`
	Query string `json:"query,omitempty"`
	// Queries are a search's terms in the current API (query is kept
	// for older answers).
	Queries []string `json:"queries,omitempty"`
	URL     string   `json:"url,omitempty"`
	Pattern string   `json:"pattern,omitempty"`
	Sources []struct {
		URL string `json:"url"`
	} `json:"sources,omitempty"`
}

// outputPart is a message item's content part: output_text with its
// annotations, or a refusal.
type outputPart struct {
	Type        string            `json:"type"`
	Text        string            `json:"text"`
	Refusal     string            `json:"refusal"`
	Annotations []json.RawMessage `json:"annotations"`
}

// responseParams maps req to a Responses API request.
func (p *Provider) responseParams(req *llm.Request) (responses.ResponseNewParams, error) {
	var params responses.ResponseNewParams
	if err := checkRequest(req); err != nil {
		return params, err
	}
	input, err := responseInput(req.Messages)
	if err != nil {
		return params, err
	}
	tools, err := responseTools(req.Tools, req.ServerTools)
	if err != nil {
		return params, err
	}
	params.Model = shared.ResponsesModel(req.Model)
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
	params.Tools = tools
	// The pages each search consulted, for the audit log's result line.
	// OpenAI keeps no copy of the conversation (Ava keeps its own, and a
	// Chat Completions request is not stored either): a reasoning item
	// then comes with its content encrypted, and goes back with it, so
	// that nothing on the next turn refers to a response OpenAI kept.
	params.Store = openai.Bool(false)
	params.Include = []responses.ResponseIncludable{responses.ResponseIncludableWebSearchCallActionSources,
		responses.ResponseIncludableReasoningEncryptedContent}
	if req.System != "" {
		params.Instructions = openai.String(req.System)
	}
	if n := p.maxTokensFor(req); n > 0 {
		params.MaxOutputTokens = openai.Int(int64(n))
	}
	if st := req.ServerTools; st != nil && st.MaxUses > 0 {
		// The role's cap on searches: web search is the only built-in
		// tool Ava offers, so the cap on built-in calls is the cap on it.
		params.MaxToolCalls = openai.Int(int64(st.MaxUses))
	}
	return params, nil
}

// responseTools maps the function tools and the provider's web search.
// Function tools are not strict: Ava's schemas are plain JSON Schema.
// OpenAI's search takes allowed domains only; blocked domains have no
// field (the configuration says so at start-up).
func responseTools(defs []llm.ToolDef, st *llm.ServerTools) ([]responses.ToolUnionParam, error) {
	var out []responses.ToolUnionParam
	for _, d := range defs {
		schema, err := toolSchema(d)
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      bool            `json:"strict"`
		}{"function", d.Name, d.Description, schema, false})
		if err != nil {
			return nil, fmt.Errorf("tool %s: %w", d.Name, err)
		}
		fn := param.Override[responses.FunctionToolParam](json.RawMessage(raw))
		out = append(out, responses.ToolUnionParam{OfFunction: &fn})
	}
	if st != nil && st.WebSearch {
		ws := responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}
		if len(st.AllowedDomains) > 0 {
			ws.Filters.AllowedDomains = st.AllowedDomains
		}
		out = append(out, responses.ToolUnionParam{OfWebSearch: &ws})
	}
	return out, nil
}

// responseInput maps the conversation to input items.
func responseInput(msgs []llm.Message) (responses.ResponseInputParam, error) {
	return mapMessages(msgs, userItems, assistantItems)
}

// userItems maps a user message to its function_call_output items (one
// per tool result, first) and a user message holding its text, if any.
func userItems(m llm.Message) (responses.ResponseInputParam, error) {
	return userParts[responses.ResponseInputParam](m,
		func(id, content string) responses.ResponseInputItemUnionParam {
			item := responses.ResponseInputItemParamOfFunctionCallOutput(content)
			item.OfFunctionCallOutput.CallID = openai.String(id)
			return item
		},
		func(text string, images []llm.Block) responses.ResponseInputItemUnionParam {
			if len(images) == 0 {
				return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
			}
			var content responses.ResponseInputMessageContentListParam
			if text != "" {
				content = append(content, responses.ResponseInputContentParamOfInputText(text))
			}
			for _, img := range images {
				part := responses.ResponseInputContentParamOfInputImage(responses.ResponseInputImageDetailAuto)
				part.OfInputImage.ImageURL = openai.String(dataURL(img))
				content = append(content, part)
			}
			return responses.ResponseInputItemParamOfMessage(content, responses.EasyInputMessageRoleUser)
		})
}

// assistantItems maps an assistant message. The items OpenAI sent go
// back as they came; text and tool calls another backend wrote are
// rebuilt; another provider's server blocks, and reasoning that is not
// OpenAI's, are dropped.
func assistantItems(m llm.Message) (responses.ResponseInputParam, error) {
	var (
		out responses.ResponseInputParam
		msg messageItem
	)
	flush := func() error {
		item, ok, err := msg.item()
		if err != nil {
			return err
		}
		if ok {
			out = append(out, item)
		}
		msg = messageItem{}
		return nil
	}
	for j, b := range m.Content {
		if b.Type == llm.BlockText && ours(b) {
			err := msg.add(b)
			if errors.Is(err, errOtherItem) {
				// Two message items in a row: the first goes whole.
				if err = flush(); err == nil {
					err = msg.add(b)
				}
			}
			if err != nil {
				return nil, fmt.Errorf("block %d: %w", j, err)
			}
			continue
		}
		if err := flush(); err != nil {
			return nil, fmt.Errorf("block %d: %w", j, err)
		}
		item, ok, err := assistantItem(b)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", j, err)
		}
		if ok {
			out = append(out, item)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// ours reports whether b carries an output item of OpenAI's Responses API.
func ours(b llm.Block) bool { return b.Provider == responsesProvider && len(b.Raw) > 0 }

// responsesProvider marks the blocks the Responses path wrote
// (llm.Block.Provider).
const responsesProvider = "openai"

// rawItem is an output item sent back as it came.
func rawItem(raw json.RawMessage) (responses.ResponseInputItemUnionParam, error) {
	if !json.Valid(raw) {
		return responses.ResponseInputItemUnionParam{}, fmt.Errorf("output item has no valid raw JSON to send back")
	}
	return param.Override[responses.ResponseInputItemUnionParam](raw), nil
}

// assistantItem maps one block that is not OpenAI's message text.
func assistantItem(b llm.Block) (responses.ResponseInputItemUnionParam, bool, error) {
	var none responses.ResponseInputItemUnionParam
	switch b.Type {
	case llm.BlockText:
		if b.Text == "" {
			return none, false, nil
		}
		return responses.ResponseInputItemParamOfMessage(b.Text, responses.EasyInputMessageRoleAssistant), true, nil
	case llm.BlockThinking, llm.BlockRedactedThinking, llm.BlockServerToolUse:
		if !ours(b) {
			return none, false, nil
		}
		item, err := rawItem(b.Raw)
		return item, err == nil, err
	case llm.BlockServerToolResult:
		// OpenAI's search call item carries its own outcome: the result
		// block is Ava's view of it (the pages, for the audit log).
		return none, false, nil
	case llm.BlockToolCall:
		if ours(b) {
			item, err := rawItem(b.Raw)
			return item, err == nil, err
		}
		if b.ToolCallID == "" || b.ToolName == "" {
			return none, false, fmt.Errorf("tool call needs both an ID and a tool name")
		}
		args := string(b.Input)
		if args == "" {
			args = "{}"
		}
		return responses.ResponseInputItemParamOfFunctionCall(args, b.ToolCallID, b.ToolName), true, nil
	}
	return none, false, fmt.Errorf("%q block not allowed in an assistant message", b.Type)
}

// messageItem gathers the text blocks of one output message item (one
// block per content part) to send the item back whole.
type messageItem struct {
	head  map[string]json.RawMessage
	id    string
	parts []json.RawMessage
}

// errOtherItem is add's answer to a text block of another message item
// than the one being gathered: the caller sends that one first.
var errOtherItem = errors.New("text of another message item")

// add appends a text block's part, or returns errOtherItem for a block of
// another message item than the one gathered.
func (m *messageItem) add(b llm.Block) error {
	var item map[string]json.RawMessage
	if err := json.Unmarshal(b.Raw, &item); err != nil {
		return fmt.Errorf("message item: %w", err)
	}
	var id string
	_ = json.Unmarshal(item["id"], &id)
	if m.head != nil && id != m.id {
		return errOtherItem
	}
	var parts []json.RawMessage
	_ = json.Unmarshal(item["content"], &parts)
	part := json.RawMessage(nil)
	if len(parts) == 1 {
		var p outputPart
		if json.Unmarshal(parts[0], &p) == nil && (p.Text == b.Text || p.Refusal == b.Text) {
			part = parts[0]
		}
	}
	if part == nil {
		// The text was changed after it came: it goes back as it is now,
		// without annotations that would point into the old text.
		var err error
		if part, err = json.Marshal(map[string]any{"type": "output_text", "text": b.Text, "annotations": []any{}}); err != nil {
			return fmt.Errorf("message item: %w", err)
		}
	}
	if m.head == nil {
		m.head, m.id = item, id
	}
	m.parts = append(m.parts, part)
	return nil
}

// item returns the gathered message item; ok is false when none is.
func (m *messageItem) item() (responses.ResponseInputItemUnionParam, bool, error) {
	if m.head == nil {
		return responses.ResponseInputItemUnionParam{}, false, nil
	}
	content, err := json.Marshal(m.parts)
	if err != nil {
		return responses.ResponseInputItemUnionParam{}, false, fmt.Errorf("message item %s: %w", m.id, err)
	}
	m.head["content"] = content
	raw, err := json.Marshal(m.head)
	if err != nil {
		return responses.ResponseInputItemUnionParam{}, false, fmt.Errorf("message item %s: %w", m.id, err)
	}
	item, err := rawItem(raw)
	return item, err == nil, err
}

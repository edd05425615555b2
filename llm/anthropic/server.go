package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/avaagent/ava/llm"
)

// Server tools: Anthropic's web search (web_search_20250305) and web
// fetch (web_fetch_20250910, behind a beta header) run on Anthropic's
// side. The model's call comes back as a server_tool_use block, the
// results as a web_search_tool_result or web_fetch_tool_result block, and
// the answer's text blocks cite the pages (web_search_result_location
// citations). All of them must go back unchanged on the next turn: Ava
// keeps each as the raw JSON the API sent (llm.Block.Raw) and sends that.

// webFetchBeta is the beta header value web_fetch_20250910 requires.
const webFetchBeta = "web-fetch-2025-09-10"

// providerName marks the blocks this backend wrote (llm.Block.Provider).
const providerName = "anthropic"

// serverToolParams maps the request's server tools.
func serverToolParams(st *llm.ServerTools) []anthropic.ToolUnionParam {
	if st == nil {
		return nil
	}
	var out []anthropic.ToolUnionParam
	if st.WebSearch {
		t := anthropic.WebSearchTool20250305Param{}
		if st.MaxUses > 0 {
			t.MaxUses = param.NewOpt(int64(st.MaxUses))
		}
		if len(st.AllowedDomains) > 0 {
			t.AllowedDomains = st.AllowedDomains
		} else if len(st.BlockedDomains) > 0 {
			t.BlockedDomains = st.BlockedDomains
		}
		out = append(out, anthropic.ToolUnionParam{OfWebSearchTool20250305: &t})
	}
	if st.WebFetch {
		t := anthropic.WebFetchTool20250910Param{}
		if st.MaxUses > 0 {
			t.MaxUses = param.NewOpt(int64(st.MaxUses))
		}
		if len(st.AllowedDomains) > 0 {
			t.AllowedDomains = st.AllowedDomains
		} else if len(st.BlockedDomains) > 0 {
			t.BlockedDomains = st.BlockedDomains
		}
		t.Citations = anthropic.CitationsConfigParam{Enabled: param.NewOpt(true)}
		out = append(out, anthropic.ToolUnionParam{OfWebFetchTool20250910: &t})
	}
	return out
}

// requestOptions are the per-request options the request needs: the web
// fetch beta header when it offers web fetch.
func requestOptions(req *llm.Request) []option.RequestOption {
	if req.ServerTools != nil && req.ServerTools.WebFetch {
		return []option.RequestOption{option.WithHeaderAdd("anthropic-beta", webFetchBeta)}
	}
	return nil
}

// serverBlockParam sends a server tool block back exactly as it came; ok
// is false for another provider's block, which this API cannot read.
func serverBlockParam(b llm.Block) (cb anthropic.ContentBlockParamUnion, ok bool, err error) {
	if b.Provider != providerName {
		return cb, false, nil
	}
	if len(b.Raw) == 0 || !json.Valid(b.Raw) {
		return cb, false, fmt.Errorf("%s block has no valid raw JSON to send back", b.Type)
	}
	return param.Override[anthropic.ContentBlockParamUnion](b.Raw), true, nil
}

// textParam is a text block with its citations as the API sent them.
func textParam(b llm.Block) anthropic.ContentBlockParamUnion {
	t := anthropic.TextBlockParam{Text: b.Text}
	for _, c := range b.Citations {
		if len(c.Raw) == 0 || !json.Valid(c.Raw) {
			continue
		}
		t.Citations = append(t.Citations, param.Override[anthropic.TextCitationParamUnion](c.Raw))
	}
	return anthropic.ContentBlockParamUnion{OfText: &t}
}

// isServerResult reports whether a content block type is a server tool's
// result (web_search_tool_result, web_fetch_tool_result, …).
func isServerResult(typ string) bool {
	return typ != "tool_result" && strings.HasSuffix(typ, "_tool_result")
}

// serverUseRaw is a streamed server_tool_use block with its input, which
// streams as input_json_delta after a start event holding "{}".
func serverUseRaw(start string, input json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(start), &m); err != nil {
		return nil, fmt.Errorf("server_tool_use block: %w", err)
	}
	m["input"] = input
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("server_tool_use block: %w", err)
	}
	return raw, nil
}

// resultPages reads the pages a server tool result found (URL and
// title), for display and the audit log; an error result has none.
func resultPages(raw string) []llm.Citation {
	var blk struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal([]byte(raw), &blk) != nil {
		return nil
	}
	type page struct {
		Type  string `json:"type"`
		URL   string `json:"url"`
		Title string `json:"title"`
	}
	var pages []page
	if json.Unmarshal(blk.Content, &pages) != nil {
		var one page
		if json.Unmarshal(blk.Content, &one) != nil {
			return nil
		}
		pages = []page{one}
	}
	var out []llm.Citation
	for _, p := range pages {
		if p.URL != "" {
			out = append(out, llm.Citation{URL: p.URL, Title: p.Title})
		}
	}
	return out
}

// citation reads a citation the API sent, keeping its raw JSON; a
// citation of another kind (a document's) keeps only its text.
func citation(raw string) (llm.Citation, error) {
	var c struct {
		URL       string `json:"url"`
		Title     string `json:"title"`
		CitedText string `json:"cited_text"`
	}
	if raw == "" {
		return llm.Citation{}, errors.New("empty citation")
	}
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return llm.Citation{}, fmt.Errorf("citation: %w", err)
	}
	return llm.Citation{URL: c.URL, Title: c.Title, CitedText: llm.CutCitedText(c.CitedText), Raw: json.RawMessage(raw)}, nil
}

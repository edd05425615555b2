package subagent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/avaagent/ava/event"
	"github.com/avaagent/ava/llm"
	"github.com/avaagent/ava/role"
	"github.com/avaagent/ava/tool"
)

// SearchTool is the tool name a role lists for web search.
const SearchTool = "web_search"

// Search is the web search a run gets, chosen by the web_search setting
// for its model's provider (Options.Search).
type Search struct {
	// Via names it for people: "SearXNG", "the provider's (anthropic)",
	// "off", ….
	Via string `json:"via"`
	// Own is set when Ava's own web_search tool is offered.
	Own bool `json:"own"`
	// Server is the provider's own search (and fetch) when it is offered
	// in place of Ava's; nil otherwise. Its MaxUses is set per role.
	Server *llm.ServerTools `json:"server,omitempty"`
}

// SearchFor is the search a run of r on model gets; a role without
// web_search gets none (Via ""). Without Options.Search, Ava's own tool
// as the role lists it.
func (m *Manager) SearchFor(r role.Role, model llm.Model) Search {
	if !slices.Contains(r.Tools, SearchTool) {
		return Search{}
	}
	if m.opt.Search == nil || model.Provider == nil {
		return Search{Via: "Ava's web_search", Own: true}
	}
	s := m.opt.Search(model.Provider.Name())
	if s.Server != nil {
		st := *s.Server
		st.MaxUses = llm.ServerSearchesPerCall(model.Provider.Name(), r.SearchMaxUses())
		// The provider's fetch stands beside Ava's page readers: a role
		// that may read pages may have the provider read them.
		st.WebFetch = st.WebFetch && (slices.Contains(r.Tools, "read_webpages") || slices.Contains(r.Tools, "http_get"))
		s.Server = &st
	}
	return s
}

// searchTools is reg without Ava's web_search when s does not offer it.
func searchTools(reg *tool.Registry, s Search) (*tool.Registry, error) {
	if s.Own {
		return reg, nil
	}
	if _, ok := reg.Get(SearchTool); !ok {
		return reg, nil
	}
	names := slices.DeleteFunc(reg.Names(), func(n string) bool { return n == SearchTool })
	return reg.Subset(names)
}

// citationsOf collects the citations of a turn's answers: the first of
// each URL, in order.
func citationsOf(msgs []llm.Message) []llm.Citation {
	var out []llm.Citation
	seen := map[string]bool{}
	for _, m := range msgs {
		if m.Role != llm.RoleAssistant {
			continue
		}
		for _, c := range m.Citations() {
			if !seen[c.URL] {
				seen[c.URL] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// eventCitations are citations as events carry them.
func eventCitations(cs []llm.Citation) []event.Citation {
	var out []event.Citation
	for _, c := range cs {
		out = append(out, event.Citation{URL: c.URL, Title: c.Title, CitedText: c.CitedText})
	}
	return out
}

// writeCitations lists a result's sources in its announcement, at most
// maxAnnouncedCitations, each cited text cut to a line.
func writeCitations(b *strings.Builder, cs []llm.Citation) {
	if len(cs) == 0 {
		return
	}
	b.WriteString("Sources:\n")
	for i, c := range cs {
		if i == maxAnnouncedCitations {
			fmt.Fprintf(b, "[… %d more sources in subagent_status]\n", len(cs)-i)
			break
		}
		title := c.Title
		if title == "" {
			title = c.URL
		}
		fmt.Fprintf(b, "%d. %s <%s>", i+1, firstLine(title, 200), c.URL)
		if c.CitedText != "" {
			fmt.Fprintf(b, ": %q", firstLine(c.CitedText, 300))
		}
		b.WriteString("\n")
	}
}

// maxAnnouncedCitations bounds the sources an announcement lists.
const maxAnnouncedCitations = 20

package confirm

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/avaagent/ava/internal/lazyre"
)

// Decision is what an answer to a proposal decides.
type Decision string

// Decisions. Unclear is not a decision: the person is asked again.
const (
	Confirmed Decision = "confirmed"
	Rejected  Decision = "rejected"
	Modified  Decision = "modified"
	Unclear   Decision = "unclear"
)

// Change is what a "modify" answer changes in the proposed spawn; zero
// fields are left as proposed.
type Change struct {
	Model          string  `json:"model,omitempty"`
	MaxCostCents   float64 `json:"maxCostCents,omitempty"`
	TimeoutSeconds float64 `json:"timeoutSeconds,omitempty"`
	MaxTokens      int     `json:"maxTokens,omitempty"`
	MaxIterations  int     `json:"maxIterations,omitempty"`
}

// IsZero reports whether c changes nothing.
func (c Change) IsZero() bool { return c == Change{} }

// String shows the change to the person: "model haiku, max cost $1.00".
func (c Change) String() string {
	var parts []string
	if c.Model != "" {
		parts = append(parts, "model "+c.Model)
	}
	if c.MaxCostCents > 0 {
		parts = append(parts, fmt.Sprintf("max cost $%.2f", c.MaxCostCents/100))
	}
	if c.TimeoutSeconds > 0 {
		parts = append(parts, "timeout "+FormatSeconds(c.TimeoutSeconds))
	}
	if c.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("max %d tokens", c.MaxTokens))
	}
	if c.MaxIterations > 0 {
		parts = append(parts, fmt.Sprintf("max %d iterations", c.MaxIterations))
	}
	if len(parts) == 0 {
		return "no change"
	}
	return strings.Join(parts, ", ")
}

// FormatSeconds shows a duration the way a person says it: "45 s",
// "2 min", "1.5 h".
func FormatSeconds(s float64) string {
	switch {
	case s < 120:
		return strconv.FormatFloat(s, 'f', -1, 64) + " s"
	case s < 2*3600:
		return strconv.FormatFloat(float64(int(s/6+0.5))/10, 'f', -1, 64) + " min"
	}
	return strconv.FormatFloat(float64(int(s/360+0.5))/10, 'f', -1, 64) + " h"
}

// Answer is a parsed answer.
type Answer struct {
	Decision Decision
	// Change is set for Modified.
	Change Change
}

// AskAgain is what the person is told when an answer is Unclear.
const AskAgain = `I could not tell whether that is a yes. Answer yes, no, or yes with a change such as "use haiku", "max $1" or "only 2 minutes".`

// AskAgainProcess is AskAgain for a proposal to run a long process,
// whose only change is its timeout.
const AskAgainProcess = `I could not tell whether that is a yes. Answer yes, no, or yes with a shorter timeout such as "only 30 seconds".`

// changeRule extracts one kind of change from an answer.
type changeRule struct {
	re    func() *regexp.Regexp
	apply func(c *Change, m []string) bool
}

var changeRules = []changeRule{
	{lazyre.New(`\$\s*(\d+(?:\.\d+)?)`), func(c *Change, m []string) bool {
		return setPositive(&c.MaxCostCents, m[1], 100)
	}},
	{lazyre.New(`\b(\d+(?:\.\d+)?)\s*(?:dollars?|usd)\b`), func(c *Change, m []string) bool {
		return setPositive(&c.MaxCostCents, m[1], 100)
	}},
	{lazyre.New(`\b(\d+(?:\.\d+)?)\s*(?:cents?|¢|c)(?:\s|$)`), func(c *Change, m []string) bool {
		return setPositive(&c.MaxCostCents, m[1], 1)
	}},
	{lazyre.New(`\b(\d+)\s*(k?)\s*tokens?\b`), func(c *Change, m []string) bool {
		n, err := strconv.Atoi(m[1])
		if m[2] == "k" {
			n *= 1000
		}
		c.MaxTokens = n
		return err == nil && n > 0
	}},
	{lazyre.New(`\b(\d+)\s*(?:iterations?|steps?|model calls?)\b`), func(c *Change, m []string) bool {
		n, err := strconv.Atoi(m[1])
		c.MaxIterations = n
		return err == nil && n > 0
	}},
	{lazyre.New(`\b(\d+(?:\.\d+)?)\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)\b`), func(c *Change, m []string) bool {
		unit := map[byte]float64{'s': 1, 'm': 60, 'h': 3600}[m[2][0]]
		return setPositive(&c.TimeoutSeconds, m[1], unit)
	}},
	{lazyre.New(`\b([a-z0-9_-]+/[a-z0-9._/:-]+|haiku|sonnet|opus)\b`), func(c *Change, m []string) bool {
		c.Model = m[1]
		return true
	}},
}

func setPositive(dst *float64, num string, unit float64) bool {
	v, err := strconv.ParseFloat(num, 64)
	*dst = v * unit
	return err == nil && v > 0
}

// phrases are matched before single words; a phrase's value is its class.
var phrases = []struct{ text, class string }{
	{"no more than", "filler"}, {"not more than", "filler"}, {"at most", "filler"}, {"up to", "filler"},
	{"no thank you", "no"}, {"no thanks", "no"}, {"never mind", "no"}, {"not now", "no"}, {"forget it", "no"},
	{"don't", "no"}, {"do not", "no"}, {"dont", "no"}, {"don t", "no"},
	{"go ahead", "yes"}, {"do it", "yes"}, {"let's go", "yes"}, {"lets go", "yes"}, {"let s go", "yes"},
	{"sounds good", "yes"}, {"please do", "yes"}, {"go for it", "yes"}, {"thank you", "filler"},
}

var (
	yesWords = wordSet("yes y yeah yea yep yup sure ok okay k go proceed confirm confirmed approve approved fine " +
		"start run alright absolutely certainly 👍 ✅")
	// softNo words may come with a change ("no, use haiku"): the change
	// is the answer. Hard ones may not ("cancel, use haiku" is unclear).
	softNoWords = wordSet("no nope nah n")
	hardNoWords = wordSet("cancel stop abort reject rejected decline skip nevermind 👎 ❌")
	fillerWords = wordSet("but and then just please pls only max maximum limit cap budget timeout under within in " +
		"with use using switch to on model instead the a of for it that's set make time cost spend thanks " +
		"then, rather at most")
)

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

var punct = strings.NewReplacer(",", " ", ";", " ", "!", " ", "—", " ", "–", " ", "(", " ", ")", " ", "’", "'")

// Parse turns a person's free-text answer to a proposal into a decision.
// It recognises yes words ("yes", "go", "sure", "ok"), no words ("no
// thanks", "cancel") and changes ("use haiku", "max $1", "only 2
// minutes", "50k tokens", "10 iterations"); a change with a yes, or alone,
// or after a plain "no" is Modified. Any word it does not know, a
// question mark, a yes together with a no, or nothing at all is Unclear.
func Parse(text string) Answer {
	s := strings.ToLower(strings.TrimSpace(text))
	if s == "" || strings.Contains(s, "?") {
		return Answer{Decision: Unclear}
	}
	s = " " + punct.Replace(s) + " "
	var c Change
	for _, r := range changeRules {
		for _, m := range r.re().FindAllStringSubmatch(s, -1) {
			if !r.apply(&c, m) {
				return Answer{Decision: Unclear}
			}
		}
		s = r.re().ReplaceAllString(s, " ")
	}
	classes := map[string]bool{}
	for _, p := range phrases {
		if strings.Contains(s, " "+p.text+" ") {
			classes[p.class] = true
			s = strings.ReplaceAll(s, " "+p.text+" ", "  ")
		}
	}
	for _, w := range strings.Fields(strings.TrimRight(s, ".")) {
		w = strings.Trim(w, ".:")
		switch {
		case w == "":
		case yesWords[w]:
			classes["yes"] = true
		case softNoWords[w]:
			classes["softno"] = true
		case hardNoWords[w]:
			classes["no"] = true
		case fillerWords[w]:
		default:
			return Answer{Decision: Unclear}
		}
	}
	return decide(classes, c)
}

// decide combines the classes of words found with the change.
func decide(classes map[string]bool, c Change) Answer {
	yes, no := classes["yes"], classes["no"] || classes["softno"]
	switch {
	case yes && no, classes["no"] && !c.IsZero():
		return Answer{Decision: Unclear}
	case !c.IsZero():
		return Answer{Decision: Modified, Change: c}
	case yes:
		return Answer{Decision: Confirmed}
	case no:
		return Answer{Decision: Rejected}
	}
	return Answer{Decision: Unclear}
}

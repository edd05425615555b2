package web

import (
	"math"
	"strconv"
	"strings"

	"github.com/avaagent/ava/internal/lazyre"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// cssRule is one style sheet rule with a compound selector.
type cssRule struct {
	tag     string
	id      string
	classes []string
	decls   map[string]string
}

var (
	cssComment  = lazyre.New(`(?s)/\*.*?\*/`)
	cssBlock    = lazyre.New(`([^{}]+)\{([^{}]*)\}`)
	compoundSel = lazyre.New(`^([a-z][a-z0-9]*|\*)?((?:[.#][a-zA-Z0-9_-]+)*)$`)
	selPart     = lazyre.New(`[.#][a-zA-Z0-9_-]+`)
)

// parseSheets reads the rules of the page's <style> elements.
func parseSheets(doc *html.Node) []cssRule {
	var rules []cssRule
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.DataAtom == atom.Style {
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.TextNode {
					rules = append(rules, parseSheet(c.Data)...)
				}
			}
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return rules
}

// parseSheet reads the rules of one style sheet that have only compound
// selectors; the blocks of at-rules are read as if they always applied.
func parseSheet(css string) []cssRule {
	var rules []cssRule
	for _, m := range cssBlock().FindAllStringSubmatch(cssComment().ReplaceAllString(css, ""), -1) {
		decls := parseDecls(m[2])
		if len(decls) == 0 {
			continue
		}
		for _, sel := range strings.Split(m[1], ",") {
			if r, ok := parseSelector(strings.TrimSpace(sel)); ok {
				r.decls = decls
				rules = append(rules, r)
			}
		}
	}
	return rules
}

// parseSelector reads a compound selector such as "p.note#x".
func parseSelector(sel string) (cssRule, bool) {
	m := compoundSel().FindStringSubmatch(sel)
	if m == nil || sel == "" {
		return cssRule{}, false
	}
	r := cssRule{tag: strings.ToLower(m[1])}
	if r.tag == "*" {
		r.tag = ""
	}
	for _, p := range selPart().FindAllString(m[2], -1) {
		if p[0] == '#' {
			r.id = p[1:]
		} else {
			r.classes = append(r.classes, p[1:])
		}
	}
	return r, true
}

// matches reports whether an element with this tag, id and classes
// matches the rule's selector.
func (r cssRule) matches(tag, id string, classes []string) bool {
	if r.tag != "" && r.tag != tag {
		return false
	}
	if r.id != "" && id != r.id {
		return false
	}
	for _, c := range r.classes {
		found := false
		for _, have := range classes {
			found = found || have == c
		}
		if !found {
			return false
		}
	}
	return true
}

// parseDecls reads "a: b; c: d" into lower-case properties and values.
func parseDecls(s string) map[string]string {
	out := map[string]string{}
	for _, d := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(d, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(strings.ToLower(v)), "!important"))
		out[strings.TrimSpace(strings.ToLower(k))] = strings.Join(strings.Fields(v), " ")
	}
	return out
}

// declarations is n's style: its presentational attributes (see
// presentation), the matching sheet rules in order, then its style
// attribute.
func declarations(n *html.Node, sheet []cssRule) map[string]string {
	out := presentation(n)
	id, classes := attr(n, "id"), strings.Fields(attr(n, "class"))
	for _, r := range sheet {
		if r.matches(n.Data, id, classes) {
			for k, v := range r.decls {
				out[k] = v
			}
		}
	}
	for k, v := range parseDecls(attr(n, "style")) {
		out[k] = v
	}
	return out
}

// rgba is a colour; a is its opacity from 0 to 1.
type rgba struct{ r, g, b, a float64 }

var (
	white = rgba{255, 255, 255, 1}
	black = rgba{0, 0, 0, 1}
)

// near reports whether text in colour c is unreadable on background bg:
// transparent, or within a small distance of it.
func (c rgba) near(bg rgba) bool {
	if c.a <= 0.05 {
		return true
	}
	return math.Abs(c.r-bg.r)+math.Abs(c.g-bg.g)+math.Abs(c.b-bg.b) < 24
}

var namedColors = map[string]rgba{
	"white": white, "black": black, "transparent": {0, 0, 0, 0},
	"red": {255, 0, 0, 1}, "green": {0, 128, 0, 1}, "blue": {0, 0, 255, 1},
	"yellow": {255, 255, 0, 1}, "gray": {128, 128, 128, 1}, "grey": {128, 128, 128, 1},
	"silver": {192, 192, 192, 1}, "snow": {255, 250, 250, 1}, "whitesmoke": {245, 245, 245, 1},
	"ivory": {255, 255, 240, 1}, "ghostwhite": {248, 248, 255, 1}, "floralwhite": {255, 250, 240, 1},
}

var rgbFunc = lazyre.New(`^rgba?\(([^)]*)\)$`)

// firstColorWord picks the colour out of a background shorthand.
func firstColorWord(v string) string {
	for _, w := range strings.Fields(v) {
		if _, ok := parseColor(w); ok {
			return w
		}
	}
	return v
}

// parseColor reads a named, #hex or rgb()/rgba() colour.
func parseColor(v string) (rgba, bool) {
	v = strings.TrimSpace(strings.ToLower(v))
	if c, ok := namedColors[v]; ok {
		return c, true
	}
	if strings.HasPrefix(v, "#") {
		return parseHex(v[1:])
	}
	if m := rgbFunc().FindStringSubmatch(v); m != nil {
		return parseRGBArgs(m[1])
	}
	return rgba{}, false
}

// parseHex reads rgb, rgba, rrggbb or rrggbbaa.
func parseHex(h string) (rgba, bool) {
	if len(h) == 3 || len(h) == 4 {
		var long strings.Builder
		for _, c := range h {
			long.WriteRune(c)
			long.WriteRune(c)
		}
		h = long.String()
	}
	if len(h) != 6 && len(h) != 8 {
		return rgba{}, false
	}
	n, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return rgba{}, false
	}
	if len(h) == 6 {
		n = n<<8 | 0xff
	}
	return rgba{float64(n >> 24 & 0xff), float64(n >> 16 & 0xff), float64(n >> 8 & 0xff), float64(n&0xff) / 255}, true
}

// parseRGBArgs reads "255, 255, 255" or "255 255 255 / 0.5".
func parseRGBArgs(s string) (rgba, bool) {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '/' })
	if len(parts) < 3 {
		return rgba{}, false
	}
	c := rgba{a: 1}
	dst := []*float64{&c.r, &c.g, &c.b, &c.a}
	for i, p := range parts[:min(4, len(parts))] {
		pct := strings.HasSuffix(p, "%")
		f, err := strconv.ParseFloat(strings.TrimSuffix(p, "%"), 64)
		if err != nil {
			return rgba{}, false
		}
		switch {
		case i < 3 && pct:
			f = f * 255 / 100
		case i == 3 && pct:
			f /= 100
		}
		*dst[i] = f
	}
	return c, true
}

// svgPresentation are the SVG presentation attributes that can hide
// text, as CSS properties of the same name.
var svgPresentation = []string{"opacity", "fill-opacity", "visibility", "display", "font-size"}

// presentation is the style n's attributes give it, below any CSS: the
// colour of <font color> and the background of bgcolor, and for an SVG
// element its presentation attributes, its fill being its text colour.
func presentation(n *html.Node) map[string]string {
	out := map[string]string{}
	if v := attr(n, "color"); v != "" && n.Data == "font" {
		out["color"] = legacyColor(v)
	}
	if v := attr(n, "bgcolor"); v != "" {
		out["background-color"] = legacyColor(v)
	}
	if n.Namespace != "svg" {
		return out
	}
	for _, k := range svgPresentation {
		if v := attr(n, k); v != "" {
			out[k] = strings.ToLower(strings.TrimSpace(v))
		}
	}
	if v := strings.ToLower(strings.TrimSpace(attr(n, "fill"))); v == "none" {
		out["color"] = "transparent"
	} else if v != "" {
		out["color"] = v
	}
	return out
}

// legacyHex is a colour attribute's hex digits written without '#'.
var legacyHex = lazyre.New(`^[0-9a-f]{3}([0-9a-f]{3})?$`)

// legacyColor is an HTML colour attribute as CSS: "ffffff" is "#ffffff",
// as browsers read it.
func legacyColor(v string) string {
	v = strings.ToLower(strings.TrimSpace(v))
	if legacyHex().MatchString(v) {
		return "#" + v
	}
	return v
}

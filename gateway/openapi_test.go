package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/avaagent/ava/gateway"
	"github.com/avaagent/ava/gateway/client"
)

// openAPIDoc is the part of an OpenAPI document the tests read.
type openAPIDoc struct {
	OpenAPI  string                                `json:"openapi"`
	Info     struct{ Title, Version string }       `json:"info"`
	Security []map[string][]string                 `json:"security"`
	Paths    map[string]map[string]json.RawMessage `json:"paths"`
	Comps    struct {
		Schemas         map[string]json.RawMessage `json:"schemas"`
		SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
	} `json:"components"`
}

// openAPIOperation is one operation of a path.
type openAPIOperation struct {
	OperationID string                     `json:"operationId"`
	Security    *[]map[string][]string     `json:"security"`
	Parameters  []map[string]any           `json:"parameters"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

// fetchOpenAPI reads GET /api/openapi.json without a token: it is
// public, and the same bytes as gateway.OpenAPI.
func fetchOpenAPI(t *testing.T, e *env) (openAPIDoc, []byte) {
	t.Helper()
	resp, err := http.Get(e.ts.URL + "/api/openapi.json")
	must(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || string(raw) != string(gateway.OpenAPI()) {
		t.Fatalf("GET /api/openapi.json without a token: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(raw))
	}
	var doc openAPIDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("the OpenAPI document is not valid JSON: %v", err)
	}
	return doc, raw
}

// pathParam matches a {name} segment of a path.
var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

// TestOpenAPIDescribesTheRoutes: the document served at
// /api/openapi.json is OpenAPI 3.1, documents every route the server
// registered and no other, says which need no token as the router
// does, declares every path parameter, and every $ref in it resolves.
func TestOpenAPIDescribesTheRoutes(t *testing.T) {
	e := newEnv(t, envOptions{})
	doc, raw := fetchOpenAPI(t, e)
	if !regexp.MustCompile(`^3\.1\.\d+$`).MatchString(doc.OpenAPI) || doc.Info.Title == "" || doc.Info.Version == "" {
		t.Fatalf("openapi %q, info %+v: want 3.1.x with a title and a version", doc.OpenAPI, doc.Info)
	}
	if len(doc.Security) == 0 {
		t.Fatal("no top-level security: every route needs the token unless it says otherwise")
	}
	for _, req := range doc.Security {
		for name := range req {
			if _, ok := doc.Comps.SecuritySchemes[name]; !ok {
				t.Errorf("security names an undefined scheme %q", name)
			}
		}
	}

	served := map[string]bool{}
	for _, pattern := range e.srv.Routes() {
		method, path, _ := strings.Cut(pattern, " ")
		served[strings.ToLower(method)+" "+strings.TrimSuffix(path, "{$}")] = true
	}
	public := map[string]bool{}
	for _, pattern := range e.srv.PublicRoutes() {
		method, path, _ := strings.Cut(pattern, " ")
		public[strings.ToLower(method)+" "+strings.TrimSuffix(path, "{$}")] = true
	}
	documented := map[string]bool{}
	ids := map[string]string{}
	for path, ops := range doc.Paths {
		for method, body := range ops {
			if method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			route := method + " " + path
			documented[route] = true
			var op openAPIOperation
			if err := json.Unmarshal(body, &op); err != nil {
				t.Fatalf("%s: %v", route, err)
			}
			checkOperation(t, route, path, op, public[route], ids)
		}
	}
	for route := range served {
		if !documented[route] {
			t.Errorf("served but not documented: %s", route)
		}
	}
	for route := range documented {
		if !served[route] {
			t.Errorf("documented but not served: %s", route)
		}
	}
	if len(served) < 20 {
		t.Fatalf("only %d routes recorded: %v", len(served), e.srv.Routes())
	}

	for _, ref := range regexp.MustCompile(`"\$ref":\s*"([^"]+)"`).FindAllStringSubmatch(string(raw), -1) {
		if !resolves(doc, raw, ref[1]) {
			t.Errorf("$ref %s does not resolve", ref[1])
		}
	}
}

// checkOperation checks one documented operation: a unique
// operationId, responses, the path's parameters declared, and public
// exactly when the router serves it without the token.
func checkOperation(t *testing.T, route, path string, op openAPIOperation, public bool, ids map[string]string) {
	t.Helper()
	if op.OperationID == "" || ids[op.OperationID] != "" {
		t.Errorf("%s: operationId %q missing or also %s's", route, op.OperationID, ids[op.OperationID])
	}
	ids[op.OperationID] = route
	if len(op.Responses) == 0 {
		t.Errorf("%s: no responses", route)
	}
	for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
		if !slices.ContainsFunc(op.Parameters, func(p map[string]any) bool {
			return p["name"] == m[1] && p["in"] == "path" && p["required"] == true
		}) {
			t.Errorf("%s: path parameter %s is not declared (in: path, required)", route, m[1])
		}
	}
	if isPublic := op.Security != nil && len(*op.Security) == 0; isPublic != public {
		t.Errorf("%s: documented public %v, served public %v", route, isPublic, public)
	}
}

// resolves reports whether a local $ref points at something.
func resolves(doc openAPIDoc, raw []byte, ref string) bool {
	var tree any
	if json.Unmarshal(raw, &tree) != nil || !strings.HasPrefix(ref, "#/") {
		return false
	}
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, ok := tree.(map[string]any)
		if !ok {
			return false
		}
		if tree, ok = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]; !ok {
			return false
		}
	}
	return true
}

// schemaValidator validates JSON values against the document's
// component schemas (JSON Schema 2020-12, as OpenAPI 3.1 has them),
// strictly: an object schema's properties are all the object may have,
// so a field the daemon sends but the document omits fails too.
type schemaValidator struct {
	t    *testing.T
	defs map[string]*jsonschema.Schema
}

func newSchemaValidator(t *testing.T, doc openAPIDoc) *schemaValidator {
	t.Helper()
	v := &schemaValidator{t: t, defs: map[string]*jsonschema.Schema{}}
	for name, raw := range doc.Comps.Schemas {
		s := new(jsonschema.Schema)
		if err := json.Unmarshal([]byte(strings.ReplaceAll(string(raw), "#/components/schemas/", "#/$defs/")), s); err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
		if s.Properties != nil && s.AdditionalProperties == nil {
			s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
		}
		v.defs[name] = s
	}
	return v
}

// check validates the JSON data against the named schema.
func (v *schemaValidator) check(name string, data []byte) {
	v.t.Helper()
	if _, ok := v.defs[name]; !ok {
		v.t.Fatalf("no schema %s", name)
	}
	root := &jsonschema.Schema{Ref: "#/$defs/" + name, Defs: v.defs}
	rs, err := root.Resolve(nil)
	if err != nil {
		v.t.Fatalf("schema %s: %v", name, err)
	}
	var inst any
	if err := json.Unmarshal(data, &inst); err != nil {
		v.t.Fatalf("%s: not JSON: %v: %s", name, err, data)
	}
	if err := rs.Validate(inst); err != nil {
		v.t.Errorf("%s does not match its schema: %v\n%s", name, err, data)
	}
}

// TestOpenAPISchemasMatchTheAnswers: what the daemon answers matches
// the document's schemas: a chat under a key the client chose (its
// stream's start, events and result), the session, a subagent, the
// lists, health, readiness and an error.
func TestOpenAPISchemasMatchTheAnswers(t *testing.T) {
	e := newEnv(t, envOptions{})
	doc, _ := fetchOpenAPI(t, e)
	v := newSchemaValidator(t, doc)

	st, err := e.c.Chat(ctx(t), client.ChatRequest{SessionKey: "ava:openapi:check-1", Message: "hello"})
	must(t, err)
	defer st.Close()
	for {
		ev, err := st.Next()
		must(t, err)
		switch {
		case ev.Type == client.EventSession:
			v.check("ChatStart", ev.Data)
		case ev.Type == client.EventDone:
			v.check("TurnResult", ev.Data)
		default:
			v.check("SessionEvent", ev.Data)
		}
		if ev.Type == client.EventDone {
			break
		}
	}
	sa := e.spawnBlocking("ava:openapi:check-1")
	for path, schema := range map[string]string{
		"/api/sessions":                      "SessionList",
		"/api/sessions/ava:openapi:check-1":  "Session",
		"/api/subagents":                     "SubagentList",
		"/api/subagents/" + sa.ID:            "Subagent",
		"/api/spawns?status=pending":         "ProposalList",
		"/api/questions":                     "QuestionList",
		"/api/logs":                          "LogList",
		"/api/mcp/servers":                   "MCPServerList",
		"/healthz":                           "Health",
		"/readyz":                            "Ready",
		"/api/sessions/ava:openapi:nosuch":   "Error",
		"/api/chat/stream?sessionKey=nosuch": "Error",
	} {
		code, body := e.do("GET", path, "", nil)
		if code != 200 && schema != "Error" {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		v.check(schema, []byte(body))
	}
	code, body := e.do("POST", "/api/chat/stop", `{"sessionKey":"`+sa.SessionKey+`"}`, nil)
	if code != 200 {
		t.Fatalf("stop: %d %s", code, body)
	}
	v.check("StopResponse", []byte(body))

	// The web panel's logins.
	code, body = e.do("POST", "/api/login", `{}`, nil)
	if code != 200 {
		t.Fatalf("login: %d %s", code, body)
	}
	v.check("LoginResult", []byte(body))
	for path, schema := range map[string]string{"GET /api/logins": "PanelLoginList", "POST /api/logout": "LoggedOut",
		"DELETE /api/logins": "Revoked", "DELETE /api/logins/L-nosuch": "Error"} {
		method, p, _ := strings.Cut(path, " ")
		reqBody := ""
		if method == "POST" {
			reqBody = "{}"
		}
		code, body := e.do(method, p, reqBody, nil)
		if code != 200 && schema != "Error" {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		v.check(schema, []byte(body))
	}
}

// TestOpenAPIProposalSchemas: a proposal, the list of them and a
// decision match the document's schemas.
func TestOpenAPIProposalSchemas(t *testing.T) {
	e := newEnv(t, envOptions{confirm: "always"})
	doc, _ := fetchOpenAPI(t, e)
	v := newSchemaValidator(t, doc)
	_, _, res := e.chat(client.ChatRequest{SessionKey: "ava:openapi:p", Message: "hello"})
	if res.Status != "success" {
		t.Fatalf("chat %+v", res)
	}
	code, body := e.do("POST", "/api/subagents", `{"role":"researcher","task":"look","model":"`+spawnModel+`","parent":"ava:openapi:p"}`, nil)
	var pending struct{ Pending json.RawMessage }
	if code != http.StatusAccepted || json.Unmarshal([]byte(body), &pending) != nil {
		t.Fatalf("spawn under AVA_CONFIRM=always: %d %s", code, body)
	}
	v.check("Proposal", pending.Pending)
	code, body = e.do("GET", "/api/spawns?status=pending", "", nil)
	var list client.ProposalList
	if code != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list.Proposals) != 1 {
		t.Fatalf("proposals: %d %s", code, body)
	}
	v.check("ProposalList", []byte(body))
	code, body = e.do("POST", "/api/spawns/"+list.Proposals[0].ID+"/confirm", `{"decision":"no"}`, nil)
	if code != 200 {
		t.Fatalf("confirm: %d %s", code, body)
	}
	v.check("Decided", []byte(body))
}

package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
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
	Servers  []struct{ URL string }                `json:"servers"`
	Security []map[string][]string                 `json:"security"`
	Paths    map[string]map[string]json.RawMessage `json:"paths"`
	Comps    struct {
		Schemas         map[string]json.RawMessage `json:"schemas"`
		SecuritySchemes map[string]json.RawMessage `json:"securitySchemes"`
		Responses       map[string]json.RawMessage `json:"responses"`
		Parameters      map[string]json.RawMessage `json:"parameters"`
		RequestBodies   map[string]json.RawMessage `json:"requestBodies"`
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
// public, and gateway.OpenAPI but for the daemon's own address in
// servers and its own session cookie's name.
func fetchOpenAPI(t *testing.T, e *env) (openAPIDoc, []byte) {
	t.Helper()
	resp, err := http.Get(e.ts.URL + "/api/openapi.json")
	must(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/openapi.json without a token: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(raw))
	}
	var doc openAPIDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("the OpenAPI document is not valid JSON: %v", err)
	}
	u, err := url.Parse(e.ts.URL)
	must(t, err)
	cookie := "ava_session_" + u.Port()
	var scheme struct{ Name string }
	must(t, json.Unmarshal(doc.Comps.SecuritySchemes["panelCookie"], &scheme))
	if len(doc.Servers) != 1 || doc.Servers[0].URL != e.ts.URL || scheme.Name != cookie {
		t.Fatalf("served document: servers %+v, cookie %q; want %s and %s", doc.Servers, scheme.Name, e.ts.URL, cookie)
	}
	written := strings.Replace(strings.Replace(string(raw), `"url": "`+e.ts.URL+`"`, `"url": "http://127.0.0.1:7777"`, 1),
		`"name": "`+cookie+`"`, `"name": "ava_session_7777"`, 1)
	if written != string(gateway.OpenAPI()) {
		t.Fatal("the served document differs from openapi.json by more than the daemon's address and cookie")
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
	if err := v.validate(name, data); err != nil {
		v.t.Errorf("%s does not match its schema: %v\n%s", name, err, data)
	}
}

// valid reports whether the JSON data matches the named schema.
func (v *schemaValidator) valid(name string, data []byte) bool {
	v.t.Helper()
	return v.validate(name, data) == nil
}

func (v *schemaValidator) validate(name string, data []byte) error {
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
	return rs.Validate(inst)
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
	kept := 0
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
			kept += min(int(ev.ID), 1)
		}
		// The stream's schema: each message is one of the chat stream's.
		v.check("ChatStreamMessage", streamMessage(t, ev))
		if ev.Type == client.EventDone {
			break
		}
	}
	// The session's stream replays what the chat streamed: its messages
	// are session events, never the chat's own session or done.
	var sample json.RawMessage
	replay, err := e.c.Stream(ctx(t), "ava:openapi:check-1", 0)
	must(t, err)
	defer replay.Close()
	for range kept {
		ev, err := replay.Next()
		must(t, err)
		v.check("SessionStreamMessage", streamMessage(t, ev))
		sample = ev.Data
	}
	// The chat's own messages are not a session stream's, even with a
	// session event's data: their event names exclude them.
	for _, own := range []string{client.EventSession, client.EventDone} {
		if v.valid("SessionStreamMessage", streamMessage(t, client.Event{Type: own, Data: sample})) {
			t.Errorf("a %s message passes as a session stream's", own)
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
}

// streamMessage is a Server-Sent Event message as the document's stream
// schemas read it: its event, its id when it has one, and its data
// decoded from JSON.
func streamMessage(t *testing.T, ev client.Event) []byte {
	t.Helper()
	m := map[string]any{"event": ev.Type, "data": ev.Data}
	if ev.ID > 0 {
		m["id"] = strconv.FormatUint(ev.ID, 10)
	}
	b, err := json.Marshal(m)
	must(t, err)
	return b
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

// TestOpenAPIComponentsAreUsed: every schema, response, parameter and
// request body the document defines is referenced somewhere (a linter
// such as redocly warns of an unused one, and a client generator makes
// a type nothing uses): the streams' message schemas too.
func TestOpenAPIComponentsAreUsed(t *testing.T) {
	var doc openAPIDoc
	raw := gateway.OpenAPI()
	must(t, json.Unmarshal(raw, &doc))
	refs := map[string]bool{}
	for _, m := range regexp.MustCompile(`"\$ref":\s*"([^"]+)"`).FindAllStringSubmatch(string(raw), -1) {
		refs[m[1]] = true
	}
	for kind, defs := range map[string]map[string]json.RawMessage{"schemas": doc.Comps.Schemas, "responses": doc.Comps.Responses,
		"parameters": doc.Comps.Parameters, "requestBodies": doc.Comps.RequestBodies} {
		for name := range defs {
			if !refs["#/components/"+kind+"/"+name] {
				t.Errorf("components/%s/%s is never referenced", kind, name)
			}
		}
	}
	for _, stream := range []struct{ path, method, item string }{{"/api/chat", "post", "ChatStreamMessage"}, {"/api/chat/stream", "get", "SessionStreamMessage"}} {
		var op struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema struct {
						Type  string
						Items struct {
							Ref string `json:"$ref"`
						}
					}
				}
			}
		}
		must(t, json.Unmarshal(doc.Paths[stream.path][stream.method], &op))
		s := op.Responses["200"].Content["text/event-stream"].Schema
		if s.Type != "array" || s.Items.Ref != "#/components/schemas/"+stream.item {
			t.Errorf("%s %s: the event stream's schema is %+v, want an array of %s", stream.method, stream.path, s, stream.item)
		}
	}
}

// TestOpenAPIGeneratedNamesDoNotCollide: a client generator's names do
// not clash. oapi-codegen (v2, default settings) names a type after
// each component (in PascalCase) and, per operation, <OperationId>Params,
// <OperationId>JSONBody, <OperationId>JSONRequestBody,
// <OperationId>Response (and more types starting with those); the
// operation "stop" made StopResponse twice, next to the schema of that
// name, and the generated code did not compile. Checked by hand with
// oapi-codegen v2.8.2:
//
//	go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -package avaapi gateway/openapi.json
//
// whose output builds (in a module with its imports).
func TestOpenAPIGeneratedNamesDoNotCollide(t *testing.T) {
	var doc openAPIDoc
	must(t, json.Unmarshal(gateway.OpenAPI(), &doc))
	// The generator's own types.
	taken := map[string]string{}
	for _, name := range []string{"Client", "ClientOption", "ClientInterface", "ClientWithResponses", "ClientWithResponsesInterface",
		"HttpRequestDoer", "RequestEditorFn", "ServerInterface", "ServerInterfaceWrapper", "EchoRouter", "RegisterHandlersOptions",
		"StrictServerInterface", "StrictHandlerFunc", "StrictMiddlewareFunc", "MiddlewareFunc"} {
		taken[name] = "oapi-codegen's own " + name
	}
	var components []string
	for kind, defs := range map[string]map[string]json.RawMessage{"schemas": doc.Comps.Schemas, "responses": doc.Comps.Responses,
		"parameters": doc.Comps.Parameters, "requestBodies": doc.Comps.RequestBodies} {
		for name := range defs {
			typ := pascal(name)
			if other, ok := taken[typ]; ok {
				t.Errorf("components/%s/%s is type %s, as is %s", kind, name, typ, other)
			}
			taken[typ] = "components/" + kind + "/" + name
			components = append(components, typ)
		}
	}
	for path, ops := range doc.Paths {
		for method, body := range ops {
			var op openAPIOperation
			if json.Unmarshal(body, &op) != nil || op.OperationID == "" {
				continue
			}
			for _, suffix := range []string{"Params", "JSONBody", "JSONRequestBody", "RequestBody", "Response", "RequestObject", "ResponseObject"} {
				typ := pascal(op.OperationID) + suffix
				if other, ok := taken[typ]; ok {
					t.Errorf("%s %s (operationId %s) makes type %s, as does %s", method, path, op.OperationID, typ, other)
				}
				taken[typ] = "operationId " + op.OperationID
				for _, c := range components {
					if strings.HasPrefix(c, typ) && c != typ {
						t.Errorf("%s %s (operationId %s) makes types named %s…, as is the component type %s", method, path, op.OperationID, typ, c)
					}
				}
			}
		}
	}
}

// pascal is a name as oapi-codegen makes a Go type of it: the parts
// between separators, each with an upper-case first letter.
func pascal(name string) string {
	var b strings.Builder
	for _, part := range regexp.MustCompile(`[^A-Za-z0-9]+`).Split(name, -1) {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

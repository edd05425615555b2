package gateway

import (
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI 3.1 document of the HTTP API, written by hand
// in openapi.json beside the routes it describes (Server.routes). A
// test keeps the two equal: every route served is documented, every
// route documented is served (TestOpenAPIDescribesTheRoutes).
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the HTTP API (JSON), as
// GET /api/openapi.json serves it.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

// serveOpenAPI answers GET /api/openapi.json. It needs no token: the
// document holds no data of the daemon, only the routes docs/api.md
// publishes too, so a client generator or an API explorer can read it
// before it has the token.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(openAPI)
}

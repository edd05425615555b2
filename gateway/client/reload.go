package client

import (
	"context"
	"net/http"
	"time"
)

// Ready is the body of GET /readyz.
type Ready struct {
	Status string `json:"status"`
	// Role is the process's part in a cluster: all, gateway or worker.
	Role string `json:"role"`
	// Config is how the configuration in force stands against the
	// files; absent when all is well.
	Config *ConfigStatus `json:"config,omitempty"`
}

// ConfigStatus is how a daemon's configuration stands against its
// files (config.yaml and the role files).
type ConfigStatus struct {
	// Error is why the last reload changed nothing (a bad edit: the
	// file, the line, the setting); the daemon runs its previous
	// configuration until an edit fixes it.
	Error string `json:"error,omitempty"`
	// RoleErrors are the role files that do not load (each keeps its
	// previous version, when it had one).
	RoleErrors []string `json:"roleErrors,omitempty"`
	// Restart are the changed settings that take effect only when the
	// daemon restarts ("changed `addr` needs a restart").
	Restart []string `json:"restart,omitempty"`
}

// ConfigChange is one setting of config.yaml that a reload found
// changed.
type ConfigChange struct {
	Key string `json:"key"`
	// Applied is set when the daemon applied it; else it waits for a
	// restart.
	Applied bool `json:"applied"`
	// Message says so: "changed `confirm` applied", "changed `addr`
	// needs a restart".
	Message string `json:"message"`
}

// Reloaded is the body of POST /api/reload's answer: what the reload
// changed.
type Reloaded struct {
	Changes []ConfigChange `json:"changes"`
	// RolesAdded, RolesRemoved and RolesChanged name the roles whose
	// definition is new, gone or different: new spawns get them, runs
	// going keep theirs.
	RolesAdded   []string `json:"rolesAdded"`
	RolesRemoved []string `json:"rolesRemoved"`
	RolesChanged []string `json:"rolesChanged"`
	// MCPServers are the MCP servers added, changed or removed.
	MCPServers []string `json:"mcpServers"`
	// RoleErrors are the role files that did not load.
	RoleErrors []string `json:"roleErrors"`
	// Restart are every changed setting that waits for a restart.
	Restart []string `json:"restart"`
}

// Role is a subagent role as the daemon runs it (GET /api/roles).
type Role struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Source is "built-in", "library" or the role file's path.
	Source string `json:"source"`
	// Overrides is the Source of the role of the same name it replaces.
	Overrides string `json:"overrides,omitempty"`
	// Untrusted is set for a workspace's role file the person did not
	// trust (ava trust); UntrustedWhy says why, Withheld what the
	// workspace gate took from it.
	Untrusted    bool     `json:"untrusted,omitempty"`
	UntrustedWhy string   `json:"untrustedWhy,omitempty"`
	Withheld     []string `json:"withheld,omitempty"`
	Model        string   `json:"model"`
	Tools        []string `json:"tools"`
	MCPServers   []string `json:"mcpServers"`
	TimeoutMs    int64    `json:"timeoutMs"`
	MaxCostCents float64  `json:"maxCostCents"`
	MaxTokens    int      `json:"maxTokens"`
	MaxIter      int      `json:"maxIterations"`
}

// RoleList is the body of GET /api/roles.
type RoleList struct {
	Roles []Role `json:"roles"`
	// Errors are the role files that do not load.
	Errors []string `json:"errors"`
}

// Timeout is the role's wall-clock limit.
func (r Role) Timeout() time.Duration { return time.Duration(r.TimeoutMs) * time.Millisecond }

// Reload asks the daemon to read config.yaml and the role files again
// and apply them; a bad configuration changes nothing and is an
// APIError (400) that says what is wrong.
func (c *Client) Reload(ctx context.Context) (Reloaded, error) {
	var out Reloaded
	err := c.do(ctx, http.MethodPost, "/api/reload", struct{}{}, &out)
	return out, err
}

// Roles lists the roles the daemon runs.
func (c *Client) Roles(ctx context.Context) (RoleList, error) {
	var out RoleList
	err := c.do(ctx, http.MethodGet, "/api/roles", nil, &out)
	return out, err
}

// Ready reads GET /readyz: whether the daemon is ready, and how its
// configuration stands against its files.
func (c *Client) Ready(ctx context.Context) (Ready, error) {
	var out Ready
	err := c.do(ctx, http.MethodGet, "/readyz", nil, &out)
	return out, err
}

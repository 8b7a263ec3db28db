package sources

// HTTPTriggerMaxBodyBytes is the largest request body the HTTP trigger reads: room for a batch
// of targets in one request, and a bound on what one request can make the manager allocate.
const HTTPTriggerMaxBodyBytes = 64 << 10

// httpTriggerRetryAfter is the Retry-After of a 429, in seconds: a controller drains a full
// buffer in about that time when its reconciles are quick. A 503 from a standby says the same:
// another replica is the one to ask, and a Service sends the retry to any of them.
const httpTriggerRetryAfter = 1

// HTTPTriggerServer serves POST /trigger/{controller} and turns each named object of the JSON body,
// {"namespace": "...", "name": "..."} or a list of them, into an event for that controller.
//
// Callers authenticate with "Authorization: Bearer <token>", compared in constant time. The
// body is read up to HTTPTriggerMaxBodyBytes and decoded strictly: unknown, duplicate or
// wrongly-cased fields, trailing data, an empty list, and names or namespaces that are not
// valid Kubernetes names are refused. Every refusal is a 4xx with a JSON body {"error": "..."}
// and is counted as rejected. A request whose events were all queued gets 202 {"queued": n};
// when the controller's buffer is full it gets 429 with Retry-After and {"error", "queued"}:
// the events before the full one were queued, and sending the whole request again is harmless,
// because a reconcile is level-triggered and the work queue merges duplicates.
//
// Channel events bypass the controller's For predicates (controller-runtime applies no
// predicate to a raw source), so a trigger reconciles the named object even when its watch
// events would be filtered; each Reconcile checks by itself whether it has work to do.
//
// With one Lease for the manager it runs only on the elected leader: a standby manager does not
// listen. With a Lease per controller group it runs on every replica (Standby set), and a
// request for a controller this replica does not lead gets 503 with Retry-After and a JSON body
// {"error", "leader"} naming the replica that leads it, if known: the caller retries, through a
// Service against another replica, or against the leader.
type HTTPTriggerServer struct {
	// BindAddress is where to listen, for example ":8082".
	BindAddress string
	// Token is the bearer token callers must present; never empty.
	Token []byte
	// Secure serves HTTPS; otherwise plain HTTP.
	Secure bool
	// CertDir holds tls.crt and tls.key, reloaded when they change (controller-runtime's
	// certwatcher). Empty, or without those files, the trigger serves a self-signed certificate
	// for localhost generated in memory at start, as the metrics endpoint does.
	CertDir string
	// Standby, when set, says whether another replica runs controller (standby true), and
	// which one (leader, empty when unknown). Nil: this replica runs every controller.
	Standby func(controller string) (leader string, standby bool)
}

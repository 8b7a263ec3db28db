// Package metricsauth guards the metrics endpoint as kube-rbac-proxy and controller-runtime's
// metrics filter do: the API server says who the caller's bearer token belongs to (a
// TokenReview) and whether that user may use the verb on the path (a SubjectAccessReview for
// a non-resource URL, such as get on /metrics). Answers are cached for a short time, so that a
// scrape every few seconds does not become two API requests each.
//
// controller-runtime's filter (pkg/metrics/filters) does the same through k8s.io/apiserver,
// which links cel-go, gRPC and OpenTelemetry into the manager and runs their package
// initialisation: a larger binary and more resident memory (README, Performance, has the
// figures). This package needs only the typed clients that client-go links in anyway.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authzclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The cache lifetimes are those of controller-runtime's filter: a token's review for a
// minute, an allowed request for five, a denied one for thirty seconds (so that a new
// RoleBinding takes effect quickly).
const (
	tokenTTL   = time.Minute
	allowedTTL = 5 * time.Minute
	deniedTTL  = 30 * time.Second
	// reviewTimeout bounds each review; a scrape that waits longer has failed anyway.
	reviewTimeout = 10 * time.Second
	// maxCached bounds each cache, so that callers sending many different tokens cannot
	// grow the manager's memory.
	maxCached = 1024
)

// TokenReviewer creates TokenReviews; client-go's typed TokenReviewInterface is one.
type TokenReviewer interface {
	Create(ctx context.Context, review *authnv1.TokenReview, opts metav1.CreateOptions) (*authnv1.TokenReview, error)
}

// AccessReviewer creates SubjectAccessReviews; client-go's typed SubjectAccessReviewInterface
// is one.
type AccessReviewer interface {
	Create(ctx context.Context, review *authzv1.SubjectAccessReview, opts metav1.CreateOptions) (*authzv1.SubjectAccessReview, error)
}

// Filter is a metricsserver.Options.FilterProvider: it reviews with the API server that cfg
// points at.
func Filter(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	authn, err := authnclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the TokenReview client: %w", err)
	}
	authz, err := authzclient.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("creating the SubjectAccessReview client: %w", err)
	}
	return New(authn.TokenReviews(), authz.SubjectAccessReviews(), time.Now).Wrap, nil
}

// Guard authenticates and authorizes requests before passing them on.
type Guard struct {
	tokens TokenReviewer
	access AccessReviewer
	now    func() time.Time

	users    cache[authnv1.UserInfo]
	decision cache[bool]
}

// New returns a Guard that reviews with tokens and access; now is the clock its caches use.
func New(tokens TokenReviewer, access AccessReviewer, now func() time.Time) *Guard {
	return &Guard{
		tokens:   tokens,
		access:   access,
		now:      now,
		users:    cache[authnv1.UserInfo]{entries: map[string]entry[authnv1.UserInfo]{}},
		decision: cache[bool]{entries: map[string]entry[bool]{}},
	}
}

// Wrap is a metricsserver.Filter: requests reach next only when the caller is authenticated
// (401 otherwise) and authorized (403 otherwise); a review that fails is a 500.
func (g *Guard) Wrap(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req)
		if !ok {
			http.Error(w, "Unauthorized: a bearer token is required", http.StatusUnauthorized)
			return
		}
		user, ok, err := g.authenticate(req.Context(), token)
		if err != nil {
			log.Error(err, "Reviewing the token of a metrics request failed")
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if !ok {
			log.V(4).Info("Refused a metrics request with an invalid token")
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		verb := strings.ToLower(req.Method)
		allowed, err := g.authorize(req.Context(), user, verb, req.URL.Path)
		if err != nil {
			log.Error(err, "Reviewing the access of a metrics request failed", "user", user.Username)
			http.Error(w, "Authorization failed", http.StatusInternalServerError)
			return
		}
		if !allowed {
			log.V(4).Info("Refused a metrics request", "user", user.Username, "verb", verb, "path", req.URL.Path)
			http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s", user.Username, verb, req.URL.Path), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, req)
	}), nil
}

// bearerToken returns the token of an "Authorization: Bearer TOKEN" header.
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(req.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// authenticate returns the user that token belongs to, and false when the API server does not
// accept it. Both answers are cached; errors are not.
func (g *Guard) authenticate(ctx context.Context, token string) (authnv1.UserInfo, bool, error) {
	// The cache is keyed by a digest, so that it holds no token.
	key := fmt.Sprintf("%x", sha256.Sum256([]byte(token)))
	if user, ok := g.users.get(key, g.now()); ok {
		return user, user.Username != "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := g.tokens.Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authnv1.UserInfo{}, false, fmt.Errorf("creating a TokenReview: %w", err)
	}
	var user authnv1.UserInfo // empty: not authenticated
	if review.Status.Authenticated {
		user = review.Status.User
	}
	g.users.put(key, user, g.now(), tokenTTL)
	return user, user.Username != "", nil
}

// authorize reports whether user may use verb on the non-resource URL path.
func (g *Guard) authorize(ctx context.Context, user authnv1.UserInfo, verb, path string) (bool, error) {
	spec := authzv1.SubjectAccessReviewSpec{
		User:                  user.Username,
		UID:                   user.UID,
		Groups:                user.Groups,
		Extra:                 extra(user.Extra),
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
	}
	// JSON writes map keys sorted, so equal specs give equal keys.
	rawKey, err := json.Marshal(spec)
	if err != nil {
		return false, fmt.Errorf("encoding a SubjectAccessReview: %w", err)
	}
	key := string(rawKey)
	if allowed, ok := g.decision.get(key, g.now()); ok {
		return allowed, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := g.access.Create(ctx, &authzv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	allowed := review.Status.Allowed && !review.Status.Denied
	ttl := deniedTTL
	if allowed {
		ttl = allowedTTL
	}
	g.decision.put(key, allowed, g.now(), ttl)
	return allowed, nil
}

// extra converts a TokenReview's extra user information to a SubjectAccessReview's.
func extra(in map[string]authnv1.ExtraValue) map[string]authzv1.ExtraValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]authzv1.ExtraValue, len(in))
	for k, v := range in {
		out[k] = authzv1.ExtraValue(v)
	}
	return out
}

// cache holds values until they expire, at most maxCached of them.
type cache[V any] struct {
	mu      sync.Mutex
	entries map[string]entry[V]
}

type entry[V any] struct {
	value   V
	expires time.Time
}

func (c *cache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

// put stores value for ttl from now. When the cache is full it first drops what has expired,
// and if it is still full the value is not stored: the next request reviews again.
func (c *cache[V]) put(key string, value V, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCached {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
	}
	if _, ok := c.entries[key]; ok || len(c.entries) < maxCached {
		c.entries[key] = entry[V]{value: value, expires: now.Add(ttl)}
	}
}

package metricsauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeTokens knows the users of some tokens, or fails every review with err.
type fakeTokens struct {
	users map[string]authnv1.UserInfo
	err   error
	calls int
}

func (f *fakeTokens) Create(_ context.Context, review *authnv1.TokenReview, _ metav1.CreateOptions) (*authnv1.TokenReview, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	out := review.DeepCopy()
	if user, ok := f.users[review.Spec.Token]; ok {
		out.Status = authnv1.TokenReviewStatus{Authenticated: true, User: user}
	} else {
		out.Status = authnv1.TokenReviewStatus{Error: "invalid bearer token"}
	}
	return out, nil
}

// fakeAccess allows the users in allowed to get /metrics, or fails every review with err.
type fakeAccess struct {
	allowed map[string]bool
	err     error
	calls   int
	last    authzv1.SubjectAccessReviewSpec
}

func (f *fakeAccess) Create(_ context.Context, review *authzv1.SubjectAccessReview, _ metav1.CreateOptions) (*authzv1.SubjectAccessReview, error) {
	f.calls++
	f.last = review.Spec
	if f.err != nil {
		return nil, f.err
	}
	out := review.DeepCopy()
	attrs := review.Spec.NonResourceAttributes
	out.Status.Allowed = f.allowed[review.Spec.User] && attrs != nil && attrs.Verb == "get" && attrs.Path == "/metrics"
	return out, nil
}

var prometheus = authnv1.UserInfo{
	Username: "system:serviceaccount:monitoring:prometheus",
	UID:      "uid-1",
	Groups:   []string{"system:serviceaccounts", "system:authenticated"},
	Extra:    map[string]authnv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
}

var stranger = authnv1.UserInfo{Username: "system:serviceaccount:default:stranger"}

func newFakes() (*fakeTokens, *fakeAccess) {
	return &fakeTokens{users: map[string]authnv1.UserInfo{"prom-token": prometheus, "stranger-token": stranger}},
		&fakeAccess{allowed: map[string]bool{prometheus.Username: true}}
}

// clock is a settable time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// serve sends one request through the guard and returns the status code and body.
func serve(t *testing.T, g *Guard, method, authorization string) (int, string) {
	t.Helper()
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "metrics") })
	h, err := g.Wrap(logr.Discard(), next)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(method, "/metrics", nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		name          string
		method        string
		authorization string
		tokenErr      error
		accessErr     error
		wantCode      int
		wantBody      string
		wantReviews   [2]int // TokenReviews, SubjectAccessReviews
	}{
		{name: "no header", authorization: "", wantCode: 401, wantBody: "Unauthorized: a bearer token is required"},
		{name: "basic auth", authorization: "Basic dXNlcjpwYXNz", wantCode: 401, wantBody: "Unauthorized: a bearer token is required"},
		{name: "empty token", authorization: "Bearer  ", wantCode: 401, wantBody: "Unauthorized: a bearer token is required"},
		{name: "unknown token", authorization: "Bearer forged", wantCode: 401, wantBody: "Unauthorized", wantReviews: [2]int{1, 0}},
		{name: "token review fails", authorization: "Bearer prom-token", tokenErr: errors.New("connection refused"),
			wantCode: 500, wantBody: "Authentication failed", wantReviews: [2]int{1, 0}},
		{name: "not allowed", authorization: "Bearer stranger-token", wantCode: 403,
			wantBody: `Forbidden: user "system:serviceaccount:default:stranger" may not get /metrics`, wantReviews: [2]int{1, 1}},
		{name: "not allowed to post", method: http.MethodPost, authorization: "Bearer prom-token", wantCode: 403,
			wantBody: `Forbidden: user "system:serviceaccount:monitoring:prometheus" may not post /metrics`, wantReviews: [2]int{1, 1}},
		{name: "access review fails", authorization: "Bearer prom-token", accessErr: errors.New("timeout"),
			wantCode: 500, wantBody: "Authorization failed", wantReviews: [2]int{1, 1}},
		{name: "allowed", authorization: "Bearer prom-token", wantCode: 200, wantBody: "metrics", wantReviews: [2]int{1, 1}},
		{name: "scheme in lower case", authorization: "bearer prom-token", wantCode: 200, wantBody: "metrics", wantReviews: [2]int{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tokens, access := newFakes()
			tokens.err, access.err = tc.tokenErr, tc.accessErr
			g := New(tokens, access, (&clock{t: time.Unix(0, 0)}).now)
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			code, body := serve(t, g, method, tc.authorization)
			if code != tc.wantCode || body != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", code, body, tc.wantCode, tc.wantBody)
			}
			if got := [2]int{tokens.calls, access.calls}; got != tc.wantReviews {
				t.Errorf("reviews (TokenReviews, SubjectAccessReviews) = %v, want %v", got, tc.wantReviews)
			}
		})
	}
}

func TestAccessReviewCarriesTheWholeUser(t *testing.T) {
	tokens, access := newFakes()
	g := New(tokens, access, time.Now)
	if code, body := serve(t, g, http.MethodGet, "Bearer prom-token"); code != 200 {
		t.Fatalf("got %d %q", code, body)
	}
	want := authzv1.SubjectAccessReviewSpec{
		User:                  prometheus.Username,
		UID:                   prometheus.UID,
		Groups:                prometheus.Groups,
		Extra:                 map[string]authzv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	}
	if diff := cmp.Diff(want, access.last); diff != "" {
		t.Errorf("SubjectAccessReview spec (-want +got):\n%s", diff)
	}
}

// TestCaching follows one caller through time: reviews are reused while they last, each for
// its own time, and a failed review is not remembered.
func TestCaching(t *testing.T) {
	tokens, access := newFakes()
	c := &clock{t: time.Unix(0, 0)}
	g := New(tokens, access, c.now)
	steps := []struct {
		name        string
		advance     time.Duration
		token       string
		tokenErr    error
		wantCode    int
		wantReviews [2]int // cumulative TokenReviews, SubjectAccessReviews
	}{
		{name: "first scrape reviews both", token: "prom-token", wantCode: 200, wantReviews: [2]int{1, 1}},
		{name: "next scrape reviews nothing", advance: 30 * time.Second, token: "prom-token", wantCode: 200, wantReviews: [2]int{1, 1}},
		{name: "token review expired, access still allowed", advance: 31 * time.Second, token: "prom-token", wantCode: 200, wantReviews: [2]int{2, 1}},
		{name: "denial is remembered", token: "stranger-token", wantCode: 403, wantReviews: [2]int{3, 2}},
		{name: "denial again within 30s", advance: 10 * time.Second, token: "stranger-token", wantCode: 403, wantReviews: [2]int{3, 2}},
		{name: "denial expired", advance: 21 * time.Second, token: "stranger-token", wantCode: 403, wantReviews: [2]int{3, 3}},
		{name: "rejected token is remembered", token: "forged", wantCode: 401, wantReviews: [2]int{4, 3}},
		{name: "rejected token again", token: "forged", wantCode: 401, wantReviews: [2]int{4, 3}},
		{name: "failed review", advance: 5 * time.Minute, token: "prom-token", tokenErr: errors.New("down"), wantCode: 500, wantReviews: [2]int{5, 3}},
		{name: "failure is not remembered", token: "prom-token", wantCode: 200, wantReviews: [2]int{6, 4}},
	}
	for _, s := range steps {
		c.t = c.t.Add(s.advance)
		tokens.err = s.tokenErr
		code, body := serve(t, g, http.MethodGet, "Bearer "+s.token)
		if code != s.wantCode {
			t.Errorf("%s: got %d %q, want %d", s.name, code, body, s.wantCode)
		}
		if got := [2]int{tokens.calls, access.calls}; got != s.wantReviews {
			t.Errorf("%s: reviews so far (TokenReviews, SubjectAccessReviews) = %v, want %v", s.name, got, s.wantReviews)
		}
	}
}

func TestCacheIsBounded(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	var users cache[string]
	users.entries = map[string]entry[string]{}
	for i := range maxCached + 10 {
		users.put(fmt.Sprint(i), "user", c.t, time.Minute)
	}
	if len(users.entries) != maxCached {
		t.Errorf("%d entries after %d puts, want the bound %d", len(users.entries), maxCached+10, maxCached)
	}
	if _, ok := users.get(fmt.Sprint(maxCached), c.t); ok {
		t.Error("a value put into a full cache was stored")
	}
	// Once the entries expire, a new one makes room by dropping them.
	c.t = c.t.Add(time.Minute)
	users.put("new", "user", c.t, time.Minute)
	if len(users.entries) != 1 {
		t.Errorf("%d entries after the others expired, want 1", len(users.entries))
	}
	if got, ok := users.get("new", c.t); !ok || got != "user" {
		t.Errorf("get(new) = %q, %v; want user, true", got, ok)
	}
}

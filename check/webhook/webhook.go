// Package webhook checks a running conversion webhook as a black box,
// whoever wrote it: a Client posts ConversionReviews and implements
// check.Converter, so the round-trip laws of package check run against it,
// and Conformance checks the protocol the API server relies on (uid echo,
// batch order and count, same-version identity, unsupported targets,
// malformed reviews, apiextensions.k8s.io/v1beta1 reviews, and the API
// server's rules for converted objects).
//
// It lives apart from package check so that check imports no net/http.
package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	kjson "sigs.k8s.io/json"

	"github.com/hubspoke/hubspoke/apirules"
	"github.com/hubspoke/hubspoke/schema"
)

// Options configure a Client.
type Options struct {
	// URL of the webhook, e.g. https://127.0.0.1:8443/convert (required).
	URL string
	// CAFile is a PEM bundle of the CAs to trust for the webhook's
	// certificate; empty means the system roots (or HTTPClient's).
	CAFile string
	// Group, Kind, Hub and Versions describe the converted resource; use
	// FromCRD to fill them from a CRD (the hub is then the storage
	// version).
	Group, Kind, Hub string
	Versions         []string
	// ReviewVersion is the ConversionReview version sent:
	// "v1" (default) or "v1beta1".
	ReviewVersion string
	// Timeout of one review (default 30s, as the API server's client).
	Timeout time.Duration
	// HTTPClient replaces the client built from CAFile (tests).
	HTTPClient *http.Client
}

// Client posts ConversionReviews to one webhook. It implements
// check.Converter and is safe for concurrent use.
type Client struct {
	opts   Options
	client *http.Client
}

// FromCRD fills o's Group, Kind, Hub (the storage version) and Versions
// from crd, when not already set.
func FromCRD(crd *schema.CRD, o Options) Options {
	if o.Group == "" {
		o.Group = crd.Group()
	}
	if o.Kind == "" {
		o.Kind = crd.Kind()
	}
	if o.Hub == "" {
		for _, v := range crd.Versions() {
			if v.Storage {
				o.Hub = v.Name
			}
		}
	}
	if len(o.Versions) == 0 {
		o.Versions = append(o.Versions, o.Hub)
		for _, v := range crd.VersionNames() {
			if v != o.Hub {
				o.Versions = append(o.Versions, v)
			}
		}
	}
	return o
}

// New returns a Client.
func New(o Options) (*Client, error) {
	if o.URL == "" {
		return nil, errors.New("webhook: no URL")
	}
	if o.Group == "" || o.Kind == "" || o.Hub == "" {
		return nil, errors.New("webhook: group, kind and hub are required")
	}
	if o.ReviewVersion == "" {
		o.ReviewVersion = "v1"
	}
	if o.ReviewVersion != "v1" && o.ReviewVersion != "v1beta1" {
		return nil, fmt.Errorf("webhook: review version %q: want v1 or v1beta1", o.ReviewVersion)
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	c := &Client{opts: o, client: o.HTTPClient}
	if c.client == nil {
		tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, fmt.Errorf("webhook: read ca file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("webhook: ca file %s: no PEM certificates", o.CAFile)
			}
			tlsConfig.RootCAs = pool
		}
		c.client = &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true}}
	}
	return c, nil
}

// Group returns the group of the converted resource.
func (c *Client) Group() string { return c.opts.Group }

// Kind returns its kind.
func (c *Client) Kind() string { return c.opts.Kind }

// Hub returns the version taken for the hub (the storage version).
func (c *Client) Hub() string { return c.opts.Hub }

// Versions returns the versions, hub first.
func (c *Client) Versions() []string { return append([]string(nil), c.opts.Versions...) }

// Convert sends obj in a review of its own and appends the converted
// object to dst.
func (c *Client) Convert(dst, obj []byte, toAPIVersion string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	resp, err := c.Review(ctx, c.opts.ReviewVersion, newUID(), toAPIVersion, [][]byte{obj})
	if err != nil {
		return nil, err
	}
	if err := resp.Err(); err != nil {
		return nil, err
	}
	if len(resp.Objects) != 1 {
		return nil, fmt.Errorf("webhook: %d converted objects for 1 sent", len(resp.Objects))
	}
	return append(dst, resp.Objects[0]...), nil
}

// Response is a webhook's reply to a ConversionReview, judged as the API
// server judges it (apirules.Response).
type Response struct {
	// HTTPStatus of the reply.
	HTTPStatus int
	// APIVersion and Kind of the review in the reply, UID its
	// response.uid, Status and Message its response.result's: read as
	// the API server's decoder reads them (keys matched exactly), for
	// messages; empty when the reply is not a review.
	APIVersion, Kind string
	UID              string
	Status, Message  string
	// Objects are the converted objects, when the API server would take
	// them (Verdict is nil).
	Objects [][]byte
	// Verdict is why the API server would refuse the reply (an
	// *apirules.ResponseError, or an HTTP status other than 200), nil
	// when it would take it. Only Review sets it: Post knows no request.
	Verdict error
	// Body is the raw reply.
	Body []byte
}

// Err returns an error unless the API server would take the reply: a
// *ReviewError, refused (ReviewError.Refused) when the webhook answered
// with a Failure and a message.
func (r *Response) Err() error {
	if r.HTTPStatus != http.StatusOK {
		return &ReviewError{msg: fmt.Sprintf("webhook: HTTP %d: %s", r.HTTPStatus, bytes.TrimSpace(truncate(r.Body, 300)))}
	}
	if r.Verdict != nil {
		var re *apirules.ResponseError
		refused := errors.As(r.Verdict, &re) && re.Refused()
		return &ReviewError{refused: refused, msg: "webhook: " + r.Verdict.Error(), err: r.Verdict}
	}
	return nil
}

// ReviewError is a review that did not succeed.
type ReviewError struct {
	refused bool
	msg     string
	err     error // the apirules verdict, if any
}

func (e *ReviewError) Error() string { return e.msg }

// Unwrap returns the *apirules.ResponseError behind the error, if any.
func (e *ReviewError) Unwrap() error { return e.err }

// Refused reports whether the webhook refused the conversion cleanly: an
// HTTP 200 review with result.status Failure and a message, which the API
// server shows to the user. check grades such a refusal of a valid object
// as a warning, as it does a rule's deliberate refusal in the engine.
func (e *ReviewError) Refused() bool { return e.refused }

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

type reviewRequest struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Request    request `json:"request"`
}

type request struct {
	UID               string            `json:"uid"`
	DesiredAPIVersion string            `json:"desiredAPIVersion"`
	Objects           []json.RawMessage `json:"objects"`
}

// reviewHead is what Post reads of a reply for messages, case-sensitively
// as the API server's decoder does.
type reviewHead struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Response   *struct {
		UID    string `json:"uid"`
		Result struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"result"`
	} `json:"response"`
}

// Review posts one ConversionReview (reviewVersion "v1" or "v1beta1") and
// judges the reply as the API server would (Response.Verdict, with
// apirules.Response). A reply that is not a review is returned with its
// HTTP status, body and verdict and no error; transport failures are
// errors.
func (c *Client) Review(ctx context.Context, reviewVersion, uid, desired string, objects [][]byte) (*Response, error) {
	req := reviewRequest{APIVersion: "apiextensions.k8s.io/" + reviewVersion, Kind: "ConversionReview",
		Request: request{UID: uid, DesiredAPIVersion: desired, Objects: make([]json.RawMessage, len(objects))}}
	for i, o := range objects {
		req.Request.Objects[i] = o
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("webhook: encode review: %w", err)
	}
	r, err := c.Post(ctx, body)
	if err != nil {
		return nil, err
	}
	if r.HTTPStatus == http.StatusOK {
		r.Objects, r.Verdict = apirules.Response(apirules.Request{APIVersion: req.APIVersion, UID: uid, DesiredAPIVersion: desired, Objects: objects}, r.Body)
	}
	return r, nil
}

// Post sends body as a review and reads the reply's head (see Response);
// it sets no Verdict and no Objects, knowing no request.
func (c *Client) Post(ctx context.Context, body []byte) (*Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.opts.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hresp, err := c.client.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("webhook: post review: %w", err)
	}
	defer hresp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(hresp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("webhook: read reply: %w", err)
	}
	r := &Response{HTTPStatus: hresp.StatusCode, Body: data}
	var h reviewHead
	if kjson.UnmarshalCaseSensitivePreserveInts(data, &h) == nil {
		r.APIVersion, r.Kind = h.APIVersion, h.Kind
		if h.Response != nil {
			r.UID, r.Status, r.Message = h.Response.UID, h.Response.Result.Status, h.Response.Result.Message
		}
	}
	return r, nil
}

func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

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

// Response is a decoded ConversionReview response.
type Response struct {
	// HTTPStatus of the reply.
	HTTPStatus int
	// APIVersion and Kind of the review in the reply.
	APIVersion, Kind string
	// UID echoed by the webhook.
	UID string
	// Status ("Success" or "Failure") and Message of the result.
	Status, Message string
	// Objects are the converted objects.
	Objects []json.RawMessage
	// Body is the raw reply.
	Body []byte
}

// Err returns an error unless the review succeeded: a *ReviewError.
func (r *Response) Err() error {
	if r.HTTPStatus != http.StatusOK {
		return &ReviewError{msg: fmt.Sprintf("webhook: HTTP %d: %s", r.HTTPStatus, bytes.TrimSpace(truncate(r.Body, 300)))}
	}
	if r.Status != "Success" {
		return &ReviewError{refused: r.Status == "Failure" && r.Message != "", msg: fmt.Sprintf("webhook: conversion %s: %s", orNone(r.Status), r.Message)}
	}
	return nil
}

// ReviewError is a review that did not succeed.
type ReviewError struct {
	refused bool
	msg     string
}

func (e *ReviewError) Error() string { return e.msg }

// Refused reports whether the webhook refused the conversion cleanly: an
// HTTP 200 review with result.status Failure and a message, which the API
// server shows to the user. check grades such a refusal of a valid object
// as a warning, as it does a rule's deliberate refusal in the engine.
func (e *ReviewError) Refused() bool { return e.refused }

func orNone(s string) string {
	if s == "" {
		return "status missing"
	}
	return s
}

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

type reviewResponse struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Response   *struct {
		UID              string            `json:"uid"`
		ConvertedObjects []json.RawMessage `json:"convertedObjects"`
		Result           struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"result"`
	} `json:"response"`
}

// Review posts one ConversionReview (reviewVersion "v1" or "v1beta1") and
// decodes the reply. A reply that is not a review is returned with its
// HTTP status and body and no error; transport failures are errors.
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
	return c.Post(ctx, body)
}

// Post sends body as a review and decodes the reply (see Review).
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
	var rr reviewResponse
	if err := json.Unmarshal(data, &rr); err != nil || rr.Response == nil {
		return r, nil
	}
	r.APIVersion, r.Kind = rr.APIVersion, rr.Kind
	r.UID = rr.Response.UID
	r.Status, r.Message = rr.Response.Result.Status, rr.Response.Result.Message
	r.Objects = rr.Response.ConvertedObjects
	return r, nil
}

func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

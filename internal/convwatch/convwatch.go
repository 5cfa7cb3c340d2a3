// Package convwatch serves Conversion objects live: it watches the
// cluster's Conversions (hubspoke.dev/v1alpha1) through a cache that holds
// nothing else, loads each generation with the one rule loader, swaps the
// converters of a review.Handler at once when one changes, keeps the last
// good generation serving when a new one fails to load, and reports what
// it serves at v1alpha1.ServedPath for the operator.
//
// It is `hubspoke serve --watch-conversions`, in both binaries: it links
// client-go, never the API server.
package convwatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/hubspoke/hubspoke/api/v1alpha1"
	"github.com/hubspoke/hubspoke/convert/rules"
	"github.com/hubspoke/hubspoke/review"
)

// Options configure a Watcher.
type Options struct {
	// Client reads the Conversion objects (required): get, list and watch
	// on conversions.hubspoke.dev is all it needs.
	Client dynamic.Interface
	// Selector, a label selector, limits the Conversions served (empty:
	// all of them).
	Selector string
	// Handler's converters are replaced on every change (required; made
	// with review.Options.Replaceable).
	Handler *review.Handler
	// Logger receives a record per load (nil: silent).
	Logger *slog.Logger
	// Registerer receives hubspoke_conversion_loads_total{result} and
	// hubspoke_conversion_served_generation{conversion} (nil: none).
	Registerer prometheus.Registerer
}

// Watcher serves the Conversions it is assigned.
type Watcher struct {
	opts    Options
	log     *slog.Logger
	synced  atomic.Bool
	loads   *prometheus.CounterVec
	served  *prometheus.GaugeVec
	mu      sync.Mutex
	byName  map[string]*loaded
	funcs   []string
	changed chan struct{} // closed and replaced on every change (tests wait on it)
}

// loaded is one Conversion as this replica holds it.
type loaded struct {
	name    string
	uid     string
	created time.Time
	// gen, file and doc are the generation served and its rules (gen 0:
	// none loaded yet).
	gen  int64
	conv review.Converter
	crd  string
	doc  []byte
	// failedGen and err: the newest generation that did not load.
	failedGen int64
	err       string
	// shadowed says why a loaded generation is not served (another
	// Conversion converts the same kind).
	shadowed string
}

// New returns a Watcher; Run starts it.
func New(opts Options) (*Watcher, error) {
	if opts.Client == nil || opts.Handler == nil {
		return nil, errors.New("convwatch: a client and a handler are required")
	}
	w := &Watcher{
		opts:    opts,
		log:     opts.Logger,
		byName:  map[string]*loaded{},
		funcs:   rules.RegisteredFuncs(),
		changed: make(chan struct{}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hubspoke_conversion_loads_total",
			Help: "Generations of Conversion objects loaded, by result (success, failure).",
		}, []string{"result"}),
		served: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hubspoke_conversion_served_generation",
			Help: "The generation of each Conversion object this replica serves.",
		}, []string{"conversion"}),
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if opts.Registerer != nil {
		for _, c := range []prometheus.Collector{w.loads, w.served} {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("convwatch: register metrics: %w", err)
			}
		}
	}
	return w, nil
}

// Run watches the Conversions until ctx is cancelled. Ready turns nil once
// every Conversion that existed at the start is loaded (or failed to).
func (w *Watcher) Run(ctx context.Context) error {
	res := w.opts.Client.Resource(v1alpha1.GroupVersionResource)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = w.opts.Selector
			return res.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = w.opts.Selector
			return res.Watch(ctx, o)
		},
	}
	// The client says whether it streams the initial list (a fake does not).
	inf := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, w.opts.Client), &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{})
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.upsert(obj) },
		UpdateFunc: func(_, obj any) { w.upsert(obj) },
		DeleteFunc: func(obj any) { w.remove(obj) },
	})
	if err != nil {
		return fmt.Errorf("convwatch: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.RunWithContext(ctx)
	}()
	if cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		w.synced.Store(true)
		w.mu.Lock()
		n := len(w.byName)
		w.notify()
		w.mu.Unlock()
		w.log.Info("conversions loaded", "count", n, "selector", w.opts.Selector)
	}
	<-done
	return nil
}

// Ready says whether the Conversions that existed at the start are loaded.
func (w *Watcher) Ready() error {
	if !w.synced.Load() {
		return errors.New("loading Conversion objects")
	}
	return nil
}

// Changed returns a channel closed at the next change of what is served
// (or of a load error).
func (w *Watcher) Changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changed
}

func (w *Watcher) notify() {
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *Watcher) upsert(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	name, uid, gen := u.GetName(), string(u.GetUID()), u.GetGeneration()
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.byName[name]
	if l != nil && l.uid != uid {
		// Deleted and created again under the same name.
		l = nil
	}
	if l != nil && (l.gen == gen || l.failedGen == gen) {
		return // a status change, or a resync: nothing new to load
	}
	if l == nil {
		l = &loaded{name: name, uid: uid, created: u.GetCreationTimestamp().Time}
		w.byName[name] = l
	}
	start := time.Now()
	f, err := v1alpha1.Parse(u)
	var doc []byte
	if err == nil {
		doc, err = v1alpha1.Document(u)
	}
	var conv review.Converter
	if err == nil {
		c, cerr := f.Converter()
		if cerr != nil {
			err = fmt.Errorf("%s: %w", v1alpha1.Source(name), cerr)
		} else {
			conv = c
		}
	}
	if err != nil {
		l.failedGen, l.err = gen, err.Error()
		w.loads.WithLabelValues("failure").Inc()
		if l.gen > 0 {
			w.log.Error("conversion failed to load; the last good generation keeps serving", "conversion", name, "generation", gen, "serving", l.gen, "error", err)
		} else {
			w.log.Error("conversion failed to load; its kind is not served", "conversion", name, "generation", gen, "error", err)
		}
		w.notify()
		return
	}
	l.gen, l.conv, l.doc, l.crd = gen, conv, doc, conv.Kind()+"."+conv.Group()
	l.failedGen, l.err = 0, ""
	w.loads.WithLabelValues("success").Inc()
	w.swap()
	w.log.Info("conversion loaded", "conversion", name, "generation", gen, "crd", l.crd, "took", time.Since(start).Round(time.Microsecond))
	w.notify()
}

func (w *Watcher) remove(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.byName[u.GetName()]; !ok {
		return
	}
	delete(w.byName, u.GetName())
	w.served.DeleteLabelValues(u.GetName())
	w.swap()
	w.log.Info("conversion deleted; its kind is no longer served", "conversion", u.GetName())
	w.notify()
}

// swap gives the handler the converters of every loaded Conversion, at
// once. When two convert the same kind, the older object serves it.
func (w *Watcher) swap() {
	ls := make([]*loaded, 0, len(w.byName))
	for _, l := range w.byName {
		if l.conv != nil {
			ls = append(ls, l)
		}
	}
	slices.SortFunc(ls, func(a, b *loaded) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	owner := map[string]string{}
	var convs []review.Converter
	for _, l := range ls {
		if o, ok := owner[l.crd]; ok {
			l.shadowed = fmt.Sprintf("not served: %s is converted by Conversion %s, created earlier", l.crd, o)
			w.served.DeleteLabelValues(l.name)
			continue
		}
		owner[l.crd], l.shadowed = l.name, ""
		convs = append(convs, l.conv)
		w.served.WithLabelValues(l.name).Set(float64(l.gen))
	}
	if err := w.opts.Handler.SetConverters(convs); err != nil {
		// Cannot happen: kinds are unique above.
		w.log.Error("conversions not swapped", "error", err)
	}
}

// Served returns what this replica serves.
func (w *Watcher) Served() v1alpha1.Served {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := v1alpha1.Served{Funcs: w.funcs, Synced: w.synced.Load(), Conversions: []v1alpha1.ServedConversion{}}
	for _, l := range w.byName {
		s.Conversions = append(s.Conversions, l.report(false))
	}
	slices.SortFunc(s.Conversions, func(a, b v1alpha1.ServedConversion) int { return strings.Compare(a.Name, b.Name) })
	if s.Funcs == nil {
		s.Funcs = []string{}
	}
	return s
}

func (l *loaded) report(withDoc bool) v1alpha1.ServedConversion {
	c := v1alpha1.ServedConversion{Name: l.name, UID: l.uid, Generation: l.gen, CRD: l.crd, FailedGeneration: l.failedGen, Error: l.err}
	if l.shadowed != "" {
		c.Generation, c.Error = 0, l.shadowed
	}
	if withDoc && c.Generation > 0 {
		c.Document = l.doc
	}
	return c
}

// ServeHTTP answers GET v1alpha1.ServedPath (a v1alpha1.Served) and
// ServedPath/NAME (one Conversion with its rule document).
func (w *Watcher) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		rw.Header().Set("Allow", http.MethodGet)
		http.Error(rw, "method not allowed: GET", http.StatusMethodNotAllowed)
		return
	}
	var v any
	name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, v1alpha1.ServedPath), "/")
	if name == "" {
		v = w.Served()
	} else {
		w.mu.Lock()
		l, ok := w.byName[name]
		var c v1alpha1.ServedConversion
		if ok {
			c = l.report(true)
		}
		w.mu.Unlock()
		if !ok {
			http.Error(rw, fmt.Sprintf("conversion %s is not loaded here", name), http.StatusNotFound)
			return
		}
		v = c
	}
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.Write(b)
}

// Package demoshop is a small shop to aim the example scripts at: a home page with a CSRF token,
// a form login that sets a session cookie and redirects, an account page, a product API, a
// cart and orders. It keeps its state in memory and is for trying Barrage on 127.0.0.1, not for
// measuring anything but Barrage itself.
package demoshop

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Shop is the demo shop's state.
type Shop struct {
	mu       sync.Mutex
	sessions map[string]string // session id -> email
	carts    map[string]*cart
	nextID   atomic.Int64
}

type cart struct {
	ID    string `json:"id"`
	Items []item `json:"items"`
	Total string `json:"total"`
}

type item struct {
	Product  string `json:"product"`
	Quantity int    `json:"quantity"`
}

type product struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Price string `json:"price"`
}

var catalogue = []product{
	{"p-100", "coffee beans, 1 kg", "24.90"},
	{"p-101", "coffee grinder", "89.00"},
	{"p-102", "espresso cups, set of 6", "19.50"},
	{"p-103", "milk frother", "34.00"},
}

// New returns an empty shop.
func New() *Shop {
	return &Shop{sessions: map[string]string{}, carts: map[string]*cart{}}
}

// Handler serves the shop.
func (s *Shop) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.home)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("GET /account", s.account)
	mux.HandleFunc("GET /api/products", s.products)
	mux.HandleFunc("GET /api/products/{id}", s.product)
	mux.HandleFunc("POST /api/cart/items", s.addToCart)
	mux.HandleFunc("POST /api/orders", s.order)
	return mux
}

func token() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Shop) home(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><title>Demo shop</title><h1>Welcome to the demo shop</h1>
<form method="post" action="/login"><input type="hidden" name="csrf" value="%s">
<input name="email"><input name="password" type="password"><button>Log in</button></form>`, token())
}

func (s *Shop) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("csrf") == "" || r.PostForm.Get("email") == "" {
		http.Error(w, "email, password and csrf are required", http.StatusBadRequest)
		return
	}
	id := token()
	s.mu.Lock()
	s.sessions[id] = r.PostForm.Get("email")
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: "session", Value: id, Path: "/", HttpOnly: true})
	http.Redirect(w, r, "/account", http.StatusSeeOther)
}

func (s *Shop) email(r *http.Request) (string, bool) {
	c, err := r.Cookie("session")
	if err != nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.sessions[c.Value]
	return e, ok
}

func (s *Shop) account(w http.ResponseWriter, r *http.Request) {
	email, ok := s.email(r)
	if !ok {
		http.Error(w, "log in first", http.StatusUnauthorized)
		return
	}
	fmt.Fprintf(w, "<h1>Your account</h1><p>Signed in as %s</p>", html.EscapeString(email))
}

func (s *Shop) products(w http.ResponseWriter, r *http.Request) {
	q := strings.ToLower(r.URL.Query().Get("q"))
	items := []product{}
	for _, p := range catalogue {
		if q == "" || strings.Contains(p.Name, q) {
			items = append(items, p)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "page": 1})
}

func (s *Shop) product(w http.ResponseWriter, r *http.Request) {
	for _, p := range catalogue {
		if p.ID == r.PathValue("id") {
			writeJSON(w, http.StatusOK, p)
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such product"})
}

func (s *Shop) addToCart(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Product  string `json:"product"`
		Quantity int    `json:"quantity"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Product == "" || in.Quantity < 1 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "product and quantity are required"})
		return
	}
	var price string
	for _, p := range catalogue {
		if p.ID == in.Product {
			price = p.Price
		}
	}
	if price == "" {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such product"})
		return
	}
	c := &cart{ID: "c-" + strconv.FormatInt(s.nextID.Add(1), 10), Items: []item{{in.Product, in.Quantity}}, Total: price}
	s.mu.Lock()
	s.carts[c.ID] = c
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, c)
}

func (s *Shop) order(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Cart string `json:"cart"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "cart is required"})
		return
	}
	s.mu.Lock()
	c, ok := s.carts[in.Cart]
	delete(s.carts, in.Cart)
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such cart"})
		return
	}
	n := s.nextID.Add(1)
	writeJSON(w, http.StatusCreated, map[string]any{"status": "confirmed", "order": fmt.Sprintf("order %d", n), "total": c.Total})
}

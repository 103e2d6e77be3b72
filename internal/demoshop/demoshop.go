// Package demoshop is a small shop to aim the example scripts at: a home page that starts a
// session (a cookie) and shows a login form with that session's CSRF token, a form login that
// checks the token and the customer's password and redirects, an account page, a product API, a
// cart and orders. It keeps its state in memory and is for trying Barrage on 127.0.0.1, not for
// measuring anything but Barrage itself.
package demoshop

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// customers are the accounts that can log in, email to password: the rows of
// examples/scripts/users.csv, which a test holds them to. The passwords are kept as written
// because the shop guards nothing; a real shop keeps a slow hash of each.
var customers = map[string]string{
	"ada@example.test":     "lovelace-1815",
	"grace@example.test":   "hopper-1906",
	"alan@example.test":    "turing-1912",
	"edsger@example.test":  "dijkstra-1930",
	"barbara@example.test": "liskov-1939",
}

// maxKept bounds the sessions, and the carts, the shop keeps. Every visit to the home page starts
// a session and every add to cart makes a cart, so a load test would otherwise grow the shop
// without end; past the bound the oldest half is forgotten, as a real shop lets sessions and
// abandoned carts expire.
const maxKept = 1 << 16

// Shop is the demo shop's state.
type Shop struct {
	mu       sync.Mutex
	sessions bounded[session]
	carts    bounded[*cart]
	nextID   atomic.Int64
}

// session is a visitor's: the CSRF token its forms carry, and who logged in (empty before).
type session struct {
	csrf  string
	email string
}

// bounded keeps values by id in two generations of limit/2 each: when the newer one is full it
// becomes the older one and the older one is dropped, so at most limit are kept and a lookup is
// two map reads at most.
type bounded[V any] struct {
	limit        int
	newer, older map[string]V
}

func newBounded[V any](limit int) bounded[V] {
	return bounded[V]{limit: limit, newer: map[string]V{}, older: map[string]V{}}
}

func (b *bounded[V]) get(id string) (V, bool) {
	if v, ok := b.newer[id]; ok {
		return v, true
	}
	v, ok := b.older[id]
	return v, ok
}

func (b *bounded[V]) put(id string, v V) {
	if len(b.newer) >= b.limit/2 {
		b.older, b.newer = b.newer, make(map[string]V, len(b.newer))
	}
	b.newer[id] = v
}

func (b *bounded[V]) drop(id string) {
	delete(b.newer, id)
	delete(b.older, id)
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
	return &Shop{sessions: newBounded[session](maxKept), carts: newBounded[*cart](maxKept)}
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
	mux.HandleFunc("GET /chat", s.chat)
	return mux
}

// chat is the shop's support chat, a WebSocket for signed-in customers: "hello" is answered
// {"type":"welcome","user":EMAIL}, "ask TEXT" {"type":"answer","question":TEXT,"agent":"Ada"},
// and "bye" closes the chat. A visitor who has not signed in is refused the upgrade (401).
func (s *Shop) chat(w http.ResponseWriter, r *http.Request) {
	_, sess, ok := s.session(r)
	if !ok || sess.email == "" {
		http.Error(w, "log in first", http.StatusUnauthorized)
		return
	}
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	defer c.Close()
	for {
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		_, msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		var answer map[string]string
		switch text := string(msg); {
		case text == "hello":
			answer = map[string]string{"type": "welcome", "user": sess.email}
		case strings.HasPrefix(text, "ask "):
			answer = map[string]string{"type": "answer", "question": strings.TrimPrefix(text, "ask "), "agent": "Ada"}
		case text == "bye":
			_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(time.Second))
			return
		default:
			answer = map[string]string{"type": "error", "error": "say hello, ask something, or bye"}
		}
		out, _ := json.Marshal(answer)
		if c.WriteMessage(websocket.TextMessage, out) != nil {
			return
		}
	}
}

// upgrader upgrades the chat's requests; same-origin checks are a browser's concern, not a
// load test's.
var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

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

// home shows the login form with the visitor's session's CSRF token, starting a session for a
// visitor who has none.
func (s *Shop) home(w http.ResponseWriter, r *http.Request) {
	_, sess, ok := s.session(r)
	if !ok {
		sess = session{csrf: token()}
		s.start(w, sess)
	}
	page(w, http.StatusOK, sess.csrf, "")
}

// page writes the home page: its login form carries csrf, and problem, when there is one, says
// why the last login failed.
func page(w http.ResponseWriter, status int, csrf, problem string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if problem != "" {
		problem = `<p class="error">` + html.EscapeString(problem) + "</p>\n"
	}
	fmt.Fprintf(w, `<!doctype html><title>Demo shop</title><h1>Welcome to the demo shop</h1>
%s<form method="post" action="/login"><input type="hidden" name="csrf" value="%s">
<input name="email"><input name="password" type="password"><button>Log in</button></form>`, problem, html.EscapeString(csrf))
}

// login logs a customer in: 403 when the form's CSRF token is not the one the shop gave the
// visitor's session (or there is no session), 401 with the form again for a wrong email or
// password, else a new session for the customer and a redirect to the account page.
func (s *Shop) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form does not parse", http.StatusBadRequest)
		return
	}
	id, sess, ok := s.session(r)
	if !ok || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(sess.csrf)) != 1 {
		http.Error(w, "the form's CSRF token is missing or not this session's: load the home page again", http.StatusForbidden)
		return
	}
	email := r.PostForm.Get("email")
	want, known := customers[email]
	if !known || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("password")), []byte(want)) != 1 {
		page(w, http.StatusUnauthorized, sess.csrf, "Wrong email or password.")
		return
	}
	// A new session id at login: an id someone planted before it (session fixation) is worth
	// nothing after.
	s.mu.Lock()
	s.sessions.drop(id)
	s.mu.Unlock()
	s.start(w, session{csrf: token(), email: email})
	http.Redirect(w, r, "/account", http.StatusSeeOther)
}

// start keeps sess under a new id and sets the cookie that carries the id.
func (s *Shop) start(w http.ResponseWriter, sess session) {
	id := token()
	s.mu.Lock()
	s.sessions.put(id, sess)
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: "session", Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// session returns the session whose id the request's cookie carries.
func (s *Shop) session(r *http.Request) (string, session, bool) {
	c, err := r.Cookie("session")
	if err != nil {
		return "", session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions.get(c.Value)
	return c.Value, sess, ok
}

func (s *Shop) account(w http.ResponseWriter, r *http.Request) {
	_, sess, ok := s.session(r)
	if !ok || sess.email == "" {
		http.Error(w, "log in first", http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<h1>Your account</h1><p>Signed in as %s</p>", html.EscapeString(sess.email))
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
	s.carts.put(c.ID, c)
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
	c, ok := s.carts.get(in.Cart)
	s.carts.drop(in.Cart)
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such cart"})
		return
	}
	n := s.nextID.Add(1)
	writeJSON(w, http.StatusCreated, map[string]any{"status": "confirmed", "order": fmt.Sprintf("order %d", n), "total": c.Total})
}

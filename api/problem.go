package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// ProblemError turns an error response of the API into a readable error: the problem's
// status, title and detail, each refused field and each broken limit on a line of its own.
func ProblemError(res *http.Response, body []byte) error {
	var p struct {
		Title      string `json:"title"`
		Detail     string `json:"detail"`
		Status     int    `json:"status"`
		Errors     []struct{ Field, Reason string }
		Violations []struct {
			Limit              string
			Allowed, Requested any
			SetBy              string `json:"set_by"`
		}
	}
	if json.Unmarshal(body, &p) != nil || p.Status == 0 {
		return fmt.Errorf("server answered %s", res.Status)
	}
	msg := fmt.Sprintf("%d %s", p.Status, p.Title)
	if p.Detail != "" && len(p.Errors) == 0 && len(p.Violations) == 0 { // else the detail says them again
		msg += ": " + p.Detail
	}
	for _, fe := range p.Errors {
		msg += fmt.Sprintf("\n  %s: %s", fe.Field, fe.Reason)
	}
	for _, v := range p.Violations {
		msg += fmt.Sprintf("\n  %s: allowed %v, requested %v", v.Limit, v.Allowed, v.Requested)
		if v.SetBy != "" {
			msg += " (the limit of " + v.SetBy + ")"
		}
	}
	return errors.New(msg)
}

package api

import (
	"fmt"
	"time"

	"github.com/barrage-load/barrage/internal/barrage"
)

// Conversions between the wire types and the domain's, for the server and the agent alike.

// Overrides is l as the domain has it; a stage with both or neither of rate and ramp_to is
// refused, naming it. The figures are not otherwise checked: LoadOverrides.Validate does that.
func (l LoadOverrides) Overrides() (barrage.LoadOverrides, error) {
	var o barrage.LoadOverrides
	if l.Vus != nil {
		o.VUs = *l.Vus
	}
	if l.DurationSeconds != nil {
		o.Duration = time.Duration(*l.DurationSeconds) * time.Second
	}
	if l.Rate != nil {
		o.Rate = *l.Rate
	}
	if sw := l.Sweep; sw != nil {
		o.Sweep = &barrage.Sweep{VUs: sw.Vus, Step: time.Duration(sw.StepSeconds) * time.Second}
	}
	if l.Stages == nil {
		return o, nil
	}
	o.Stages = make([]barrage.Stage, len(*l.Stages))
	for i, st := range *l.Stages {
		if (st.Rate == nil) == (st.RampTo == nil) {
			return barrage.LoadOverrides{}, barrage.Invalid(fmt.Sprintf("stages[%d]", i), "give exactly one of rate and ramp_to")
		}
		o.Stages[i] = barrage.Stage{Duration: time.Duration(st.DurationSeconds) * time.Second}
		if st.Rate != nil {
			o.Stages[i].To = *st.Rate
		} else {
			o.Stages[i].To, o.Stages[i].Ramp = *st.RampTo, true
		}
	}
	return o, nil
}

// LoadOf is o on the wire.
func LoadOf(o barrage.LoadOverrides) LoadOverrides {
	var l LoadOverrides
	if o.VUs > 0 {
		l.Vus = &o.VUs
	}
	if o.Duration > 0 {
		l.DurationSeconds = ptr(int(o.Duration / time.Second))
	}
	if o.Rate > 0 {
		l.Rate = &o.Rate
	}
	if sw := o.Sweep; sw != nil {
		l.Sweep = &RunSweep{Vus: sw.VUs, StepSeconds: int(sw.Step / time.Second)}
	}
	if len(o.Stages) > 0 {
		stages := make([]RunStage, len(o.Stages))
		for i, st := range o.Stages {
			stages[i] = RunStage{DurationSeconds: int(st.Duration / time.Second)}
			if st.Ramp {
				stages[i].RampTo = ptr(st.To)
			} else {
				stages[i].Rate = ptr(st.To)
			}
		}
		l.Stages = &stages
	}
	return l
}

// Pin is p as the domain has it.
func (p PluginPin) Pin() barrage.PluginPin {
	out := barrage.PluginPin{Alias: p.Alias, Name: p.Name, Version: p.Version, Kind: string(p.Kind), SHA256: p.Sha256,
		Signer: deref(p.Signer), SignerID: deref(p.SignerId), Shasums: deref(p.Shasums), Signature: deref(p.Signature), Network: deref(p.Network)}
	if p.Source != nil {
		out.Source = string(*p.Source)
	}
	return out
}

// PinsFrom is pins as the domain has them.
func PinsFrom(pins []PluginPin) []barrage.PluginPin {
	out := make([]barrage.PluginPin, len(pins))
	for i, p := range pins {
		out[i] = p.Pin()
	}
	return out
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// nonZero is a pointer to v, or nil when v is its type's zero value.
func nonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// nonEmpty is a pointer to v, or nil when v is empty.
func nonEmpty[T any](v []T) *[]T {
	if len(v) == 0 {
		return nil
	}
	return &v
}

// PinsOf is pins on the wire.
func PinsOf(pins []barrage.PluginPin) []PluginPin {
	out := make([]PluginPin, len(pins))
	for i, p := range pins {
		out[i] = PluginPin{Alias: p.Alias, Name: p.Name, Version: p.Version, Kind: PluginPinKind(p.Kind), Sha256: p.SHA256,
			Source: (*PluginPinSource)(nonZero(p.Source)), Signer: nonZero(p.Signer), SignerId: nonZero(p.SignerID),
			Shasums: nonZero(p.Shasums), Signature: nonEmpty(p.Signature), Network: nonEmpty(p.Network)}
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// ByName is the quotas q names, by name (barrage.QuotaStorageBytes...); nil when q is nil.
func (q *QuotaLimits) ByName() map[string]int64 {
	if q == nil {
		return nil
	}
	out := map[string]int64{}
	for name, f := range q.fields() {
		if *f != nil {
			out[name] = **f
		}
	}
	return out
}

// NewQuotaLimits is the quotas named in byName as the API has them, nil when there are none.
// A name that is no quota is left out.
func NewQuotaLimits(byName map[string]int64) *QuotaLimits {
	if len(byName) == 0 {
		return nil
	}
	var q QuotaLimits
	fields := q.fields()
	for name, n := range byName {
		if f := fields[name]; f != nil {
			*f = &n
		}
	}
	return &q
}

// fields are q's fields by the name of their quota.
func (q *QuotaLimits) fields() map[string]**int64 {
	return map[string]**int64{barrage.QuotaStorageBytes: &q.StorageBytes, barrage.QuotaTests: &q.Tests,
		barrage.QuotaNamespaces: &q.Namespaces, barrage.QuotaPendingVersions: &q.PendingVersions, barrage.QuotaTargets: &q.Targets}
}

// Package load is an open-loop HTTP load generator for the exchange's REST
// API: signed order placement and cancellation at a fixed arrival rate over
// many keep-alive connections.
//
// Latency is measured from each request's intended send time (the arrival
// schedule), not from when a connection became free, so a stall in the
// server shows up as latency of every request it delayed instead of as a
// pause in sending (coordinated omission, Gil Tene; wrk2 does the same).
// Latencies go into HdrHistograms in microseconds.
package load

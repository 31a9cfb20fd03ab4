package journal

// UserRows returns every user's registration row (key and value, copied):
// the CmdAddUser a loaded snapshot's users are announced from
// (announceUsers). A member that installs another's snapshot needs them
// besides it, or it would hold users it has no credentials for.
func (s *Store) UserRows() ([][2][]byte, error) {
	var rows [][2][]byte
	err := s.scan([]byte{pfxUser}, []byte{pfxUser + 1}, false, func(k, v []byte) bool {
		rows = append(rows, [2][]byte{append([]byte(nil), k...), append([]byte(nil), v...)})
		return true
	})
	return rows, err
}

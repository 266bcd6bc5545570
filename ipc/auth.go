package ipc

import "time"

// Message types of devices and pairing (feature "auth").
const (
	TypePairStart     = "pair_start"
	TypePairCode      = "pair_code"
	TypePair          = "pair"
	TypePaired        = "paired"
	TypeDevices       = "devices"
	TypeDeviceList    = "device_list"
	TypeDeviceRevoke  = "device_revoke"
	TypeDeviceRevoked = "device_revoked"
	TypeWhoami        = "whoami"
	TypeIdentity      = "identity"
)

// PairStart asks hearth for a one-time pairing code for a new device
// (the owner only). Actor is the new device's actor type: "collaborator"
// when empty, or "owner" for another device of the owner's.
//
//	{"type":"pair_start","actor":"owner","ref":"p1"}
type PairStart struct {
	Actor string `json:"actor,omitempty"`
	Ref   string `json:"ref,omitempty"`
}

func (*PairStart) Type() string { return TypePairStart }

// PairCode is hearth's answer to pair_start: the code to type on the new
// device (single use, until Expires), and the fingerprint of hearth's TLS
// certificate ("" without TLS) for the new device to check.
//
//	{"type":"pair_code","code":"7KQ2M9XHTR","actor":"owner","expires":"…","fingerprint":"sha256:…","ref":"p1"}
type PairCode struct {
	Code        string    `json:"code"`
	Actor       string    `json:"actor"`
	Expires     time.Time `json:"expires"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	Ref         string    `json:"ref,omitempty"`
}

func (*PairCode) Type() string { return TypePairCode }

// Pair is a new device's first message, instead of connect: it trades a
// pairing code for a device token. hearth answers paired, or an error
// (unauthorized for a wrong, expired or used code, throttled as a wrong
// token is), and closes the connection; the device then connects with
// its token.
//
//	{"type":"pair","code":"7KQ2M9XHTR","name":"laptop","protocol":1}
type Pair struct {
	Code     string `json:"code"`
	Name     string `json:"name,omitempty"`
	Client   string `json:"client,omitempty"`
	Protocol int    `json:"protocol,omitempty"`
}

func (*Pair) Type() string { return TypePair }

// Device is a paired device as hearth shows it: never a credential.
type Device struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Actor     string    `json:"actor"`
	Created   time.Time `json:"created"`
	LastUsed  time.Time `json:"last_used,omitzero"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// Paired is hearth's answer to pair: the new device and its token, sent
// this once and kept only as a hash by hearth.
//
//	{"type":"paired","device":{…},"token":"mnemo_dev_…","fingerprint":"sha256:…"}
type Paired struct {
	Device      Device `json:"device"`
	Token       string `json:"token"`
	Fingerprint string `json:"fingerprint,omitempty"`
}

func (*Paired) Type() string { return TypePaired }

// Devices asks for the paired devices (the owner only).
//
//	{"type":"devices","ref":"d1"}
type Devices struct {
	Ref string `json:"ref,omitempty"`
}

func (*Devices) Type() string { return TypeDevices }

// DeviceList answers devices.
type DeviceList struct {
	Devices []Device `json:"devices"`
	Ref     string   `json:"ref,omitempty"`
}

func (*DeviceList) Type() string { return TypeDeviceList }

// DeviceRevoke revokes a device's credential (the owner only); its live
// connections are closed at once.
//
//	{"type":"device_revoke","id":"3fa9c1d2","ref":"r1"}
type DeviceRevoke struct {
	ID  string `json:"id"`
	Ref string `json:"ref,omitempty"`
}

func (*DeviceRevoke) Type() string { return TypeDeviceRevoke }

// DeviceRevoked confirms device_revoke.
type DeviceRevoked struct {
	ID  string `json:"id"`
	Ref string `json:"ref,omitempty"`
}

func (*DeviceRevoked) Type() string { return TypeDeviceRevoked }

// Whoami asks who this connection authenticated as.
type Whoami struct {
	Ref string `json:"ref,omitempty"`
}

func (*Whoami) Type() string { return TypeWhoami }

// Identity answers whoami.
//
//	{"type":"identity","subject":"laptop","actor":"owner","device":"3fa9c1d2"}
type Identity struct {
	Subject string `json:"subject"`
	Actor   string `json:"actor"`
	Device  string `json:"device,omitempty"`
	Ref     string `json:"ref,omitempty"`
}

func (*Identity) Type() string { return TypeIdentity }

func newAuthMsg(typ string) Msg {
	switch typ {
	case TypePairStart:
		return new(PairStart)
	case TypePairCode:
		return new(PairCode)
	case TypePair:
		return new(Pair)
	case TypePaired:
		return new(Paired)
	case TypeDevices:
		return new(Devices)
	case TypeDeviceList:
		return new(DeviceList)
	case TypeDeviceRevoke:
		return new(DeviceRevoke)
	case TypeDeviceRevoked:
		return new(DeviceRevoked)
	case TypeWhoami:
		return new(Whoami)
	case TypeIdentity:
		return new(Identity)
	}
	return nil
}

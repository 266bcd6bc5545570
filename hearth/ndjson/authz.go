package ndjson

import (
	"context"
	"errors"
	"net/netip"
	"reflect"

	"github.com/mnemo/mnemo/hearth/auth"
	"github.com/mnemo/mnemo/ipc"
)

// Authority is what the door needs of the auth layer (*auth.Store).
type Authority interface {
	Authenticate(ctx context.Context, credential string, source netip.Addr) (auth.Identity, error)
	Authorize(id auth.Identity, res auth.Resource, act auth.Action) error
	StartPairing(ctx context.Context, actor auth.Actor) (auth.PairCode, error)
	Redeem(ctx context.Context, code, name string) (auth.DeviceInfo, string, error)
	Devices() []auth.DeviceInfo
	Revoke(ctx context.Context, id string) error
	OnRevoke(f func(deviceID string)) (stop func())
}

// need is the resource and action a client message needs.
type need struct {
	res auth.Resource
	act auth.Action
}

// needs is the door's authorization table: what each client message
// needs (DESIGN.md, Auth). Connecting needs conversation read (a client
// gets the conversation's history and events); ping, disconnect and
// whoami need nothing more. A type not listed needs admin, so a new
// message is the owner's until it is given a row.
var needs = map[string]need{
	ipc.TypeMessage:      {auth.ResConversation, auth.ActWrite},
	ipc.TypeTranscript:   {auth.ResConversation, auth.ActWrite},
	ipc.TypeCancel:       {auth.ResConversation, auth.ActWrite},
	ipc.TypeHistoryQuery: {auth.ResConversation, auth.ActRead},
	ipc.TypeHealth:       {auth.ResConversation, auth.ActRead},
	// Conversations: listing and resuming is reading (as connecting is),
	// starting one is writing.
	ipc.TypeConversations:   {auth.ResConversation, auth.ActRead},
	ipc.TypeResume:          {auth.ResConversation, auth.ActRead},
	ipc.TypeNewConversation: {auth.ResConversation, auth.ActWrite},
	ipc.TypeVoiceRequest:    {auth.ResVoice, auth.ActWrite},
	ipc.TypeStopVoice:       {auth.ResVoice, auth.ActWrite},
	ipc.TypeVoiceToolCall:   {auth.ResVoice, auth.ActWrite},
	ipc.TypeConfirm:         {auth.ResTools, auth.ActWrite},
	ipc.TypeSearch:          {auth.ResMemory, auth.ActRead},
	ipc.TypeForget:          {auth.ResMemory, auth.ActWrite},
	ipc.TypeProposals:       {auth.ResVault, auth.ActRead},
	ipc.TypeVaultRead:       {auth.ResVault, auth.ActRead},
	ipc.TypeVaultList:       {auth.ResVault, auth.ActRead},
	ipc.TypeVaultHistory:    {auth.ResVault, auth.ActRead},
	ipc.TypeVaultWrite:      {auth.ResVault, auth.ActWrite},
	ipc.TypeProposalDecide:  {auth.ResVault, auth.ActAdmin},
	ipc.TypeVaultPurge:      {auth.ResVault, auth.ActAdmin},
	ipc.TypeVaultExport:     {auth.ResVault, auth.ActAdmin},
	ipc.TypeJobs:            {auth.ResVault, auth.ActRead},
	ipc.TypeJobRun:          {auth.ResVault, auth.ActAdmin},
	ipc.TypeShutdown:        {auth.ResAdmin, auth.ActAdmin},
	ipc.TypeProviderCheck:   {auth.ResAdmin, auth.ActAdmin},
	ipc.TypePairStart:       {auth.ResAdmin, auth.ActAdmin},
	ipc.TypeDevices:         {auth.ResAdmin, auth.ActAdmin},
	ipc.TypeDeviceRevoke:    {auth.ResAdmin, auth.ActAdmin},
}

// free are the client messages every connected client may send.
var free = map[string]bool{ipc.TypePing: true, ipc.TypeDisconnect: true, ipc.TypeWhoami: true}

// connectNeed is what connecting needs.
var connectNeed = need{auth.ResConversation, auth.ActRead}

// needOf is what m needs; ok is false for a free message.
func needOf(typ string) (need, bool) {
	if free[typ] {
		return need{}, false
	}
	if n, ok := needs[typ]; ok {
		return n, true
	}
	return need{auth.ResAdmin, auth.ActAdmin}, true
}

// authorize says whether id may send m.
func authorize(a Authority, id auth.Identity, m ipc.Msg) error {
	n, ok := needOf(m.Type())
	if !ok {
		return nil
	}
	return a.Authorize(id, n.res, n.act)
}

// forbidden is the one answer to a message its sender may not send.
func forbidden(m ipc.Msg) *ipc.Error {
	return &ipc.Error{Code: ipc.CodeForbidden, Message: "this client is not allowed to do that", Ref: refOf(m)}
}

// refOf is m's Ref field, "" when it has none.
func refOf(m ipc.Msg) string {
	v := reflect.ValueOf(m)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	f := v.FieldByName("Ref")
	if !f.IsValid() || f.Kind() != reflect.String {
		return ""
	}
	return f.String()
}

// authError is the refusal for a failed authentication.
func authError(err error) *ipc.Error {
	if errors.Is(err, auth.ErrForbidden) {
		return &ipc.Error{Code: ipc.CodeForbidden, Message: "this credential may not connect to this door"}
	}
	return &ipc.Error{Code: ipc.CodeUnauthorized, Message: "wrong, revoked or missing token"}
}

package tui

import "github.com/charmbracelet/lipgloss"

// Palette. Adaptive colors pick the light or dark variant from the
// terminal's background, which lipgloss detects once.
var (
	colorUser   = lipgloss.AdaptiveColor{Light: "#3B6FD6", Dark: "#6FA8FF"}
	colorAgent  = lipgloss.AdaptiveColor{Light: "#C2570C", Dark: "#FFAF5F"}
	colorVoice  = lipgloss.AdaptiveColor{Light: "#0F8A6A", Dark: "#5FD7AF"}
	colorTool   = lipgloss.AdaptiveColor{Light: "#6B4FBB", Dark: "#B39DFF"}
	colorOK     = lipgloss.AdaptiveColor{Light: "#1A7F37", Dark: "#7EE787"}
	colorWarn   = lipgloss.AdaptiveColor{Light: "#9A6700", Dark: "#F2CC60"}
	colorErr    = lipgloss.AdaptiveColor{Light: "#CF222E", Dark: "#FF7B72"}
	colorDim    = lipgloss.AdaptiveColor{Light: "#8C8C8C", Dark: "#6E6E6E"}
	colorSubtle = lipgloss.AdaptiveColor{Light: "#D0D0D0", Dark: "#3A3A3A"}
	colorText   = lipgloss.AdaptiveColor{Light: "#1F1F1F", Dark: "#E6E6E6"}
	colorSelBg  = lipgloss.AdaptiveColor{Light: "#E4DDFF", Dark: "#3D3260"}
)

// styles are every lipgloss style the UI draws with, built once.
type styles struct {
	userBar, userLabel   lipgloss.Style
	voiceBar, voiceLabel lipgloss.Style
	agentLabel           lipgloss.Style
	stamp, tag, warnTag  lipgloss.Style
	errTag               lipgloss.Style
	voiceText            lipgloss.Style

	notice, noticeWarn, noticeErr lipgloss.Style

	toolBorder               lipgloss.Style
	toolName, toolArgs       lipgloss.Style
	toolOK, toolErr, toolRun lipgloss.Style
	toolResult, toolReason   lipgloss.Style

	statusOK, statusWarn, statusErr, statusDim lipgloss.Style
	statusText                                 lipgloss.Style
	errFaded                                   lipgloss.Style

	rule       lipgloss.Style
	marker     lipgloss.Style
	panelTitle lipgloss.Style
	popup      lipgloss.Style
	popupSel   lipgloss.Style
	popupDesc  lipgloss.Style
	box        lipgloss.Style
	boxTitle   lipgloss.Style
	key        lipgloss.Style
	dim        lipgloss.Style
}

func newStyles() *styles {
	s := lipgloss.NewStyle
	return &styles{
		userBar:    s().Foreground(colorUser),
		userLabel:  s().Foreground(colorUser).Bold(true),
		voiceBar:   s().Foreground(colorVoice),
		voiceLabel: s().Foreground(colorVoice).Bold(true),
		agentLabel: s().Foreground(colorAgent).Bold(true),
		stamp:      s().Foreground(colorDim),
		tag:        s().Foreground(colorDim),
		warnTag:    s().Foreground(colorWarn),
		errTag:     s().Foreground(colorErr),
		voiceText:  s().Italic(true),

		notice:     s().Foreground(colorDim).Italic(true),
		noticeWarn: s().Foreground(colorWarn),
		noticeErr:  s().Foreground(colorErr),

		toolBorder: s().Foreground(colorTool),
		toolName:   s().Foreground(colorTool).Bold(true),
		toolArgs:   s().Foreground(colorDim),
		toolOK:     s().Foreground(colorOK),
		toolErr:    s().Foreground(colorErr),
		toolRun:    s().Foreground(colorWarn),
		toolResult: s().Foreground(colorText),
		toolReason: s().Foreground(colorDim).Italic(true),

		statusOK:   s().Foreground(colorOK),
		statusWarn: s().Foreground(colorWarn),
		statusErr:  s().Foreground(colorErr).Bold(true),
		statusDim:  s().Foreground(colorDim),
		statusText: s().Foreground(colorText),
		errFaded:   s().Foreground(colorDim),

		rule:       s().Foreground(colorSubtle),
		marker:     s().Foreground(colorAgent).Bold(true),
		panelTitle: s().Foreground(colorTool).Bold(true),
		popup:      s().Foreground(colorText),
		popupSel:   s().Foreground(colorText).Background(colorSelBg).Bold(true),
		popupDesc:  s().Foreground(colorDim),
		box:        s().Border(lipgloss.RoundedBorder()).BorderForeground(colorTool).Padding(0, 1),
		boxTitle:   s().Foreground(colorTool).Bold(true),
		key:        s().Foreground(colorAgent).Bold(true),
		dim:        s().Foreground(colorDim),
	}
}

/**
 * The OS dialogs that ask about an update: the exact program and argv for each, and how its answer
 * reads. Every piece of text reaches the dialog as its own argument or environment variable, never
 * inside a script or a shell line, and each tool is told to show it as plain text.
 */
import { BUTTON_LABELS, dialogMessage, dialogTitle, headline, type PromptChoice, type UpdateOffer } from './offer.js';
import type { CommandResult } from '../commands.js';

export interface DialogCommand {
  file: string;
  args: string[];
  /** Added to the environment the tool runs with. */
  env: Record<string, string>;
  /** The user's choice, or undefined when the tool failed (no display, no session): ask another way. */
  choice(result: CommandResult): PromptChoice | undefined;
}

const choiceByLabel = (label: string): PromptChoice | undefined => (Object.keys(BUTTON_LABELS) as PromptChoice[]).find((choice) => BUTTON_LABELS[choice] === label);

/**
 * macOS: `display dialog` with three buttons; the texts arrive as `argv` of the script's run handler.
 * "Not right now" is the cancel button (Escape); its "user canceled" error (-128) is caught, so any
 * other failure (no GUI session) is a non-zero exit.
 */
export function osascriptDialog(offer: UpdateOffer, osascript: string): DialogCommand {
  const buttons = `{"${BUTTON_LABELS.skip}", "${BUTTON_LABELS.later}", "${BUTTON_LABELS.install}"}`;
  const script = [
    'on run argv',
    'try',
    `return button returned of (display dialog (item 1 of argv) with title (item 2 of argv) buttons ${buttons} default button "${BUTTON_LABELS.install}" cancel button "${BUTTON_LABELS.later}")`,
    'on error number -128',
    `return "${BUTTON_LABELS.later}"`,
    'end try',
    'end run',
  ];
  return {
    file: osascript,
    args: [...script.flatMap((line) => ['-e', line]), dialogMessage(offer), dialogTitle(offer)],
    env: {},
    choice: (result) => (result.code === 0 ? choiceByLabel(result.stdout.trim()) : undefined),
  };
}

/**
 * Windows: a small WinForms window (MessageBox cannot name its buttons). The script is a constant,
 * passed base64-encoded (no quoting rules to get wrong); the texts come from environment variables.
 * The notes sit in a read-only text box; the label does not treat `&` as a mnemonic.
 */
const POWERSHELL_DIALOG = `
Add-Type -AssemblyName System.Windows.Forms
[System.Windows.Forms.Application]::EnableVisualStyles()
$form = New-Object System.Windows.Forms.Form
$form.Text = $env:LATCHKEY_UPDATE_TITLE
$form.StartPosition = 'CenterScreen'
$form.FormBorderStyle = 'FixedDialog'
$form.MaximizeBox = $false
$form.MinimizeBox = $false
$form.TopMost = $true
$form.ClientSize = New-Object System.Drawing.Size(520, 360)
$label = New-Object System.Windows.Forms.Label
$label.UseMnemonic = $false
$label.Text = $env:LATCHKEY_UPDATE_HEADLINE
$label.SetBounds(12, 12, 496, 36)
$notes = New-Object System.Windows.Forms.TextBox
$notes.Multiline = $true
$notes.ReadOnly = $true
$notes.ScrollBars = 'Vertical'
$notes.Text = $env:LATCHKEY_UPDATE_NOTES -replace "\`r?\`n", "\`r\`n"
$notes.SetBounds(12, 52, 496, 256)
function New-Choice($text, $result, $x) {
  $button = New-Object System.Windows.Forms.Button
  $button.UseMnemonic = $false
  $button.Text = $text
  $button.DialogResult = $result
  $button.SetBounds($x, 320, 160, 28)
  $form.Controls.Add($button)
  return $button
}
$install = New-Choice $env:LATCHKEY_UPDATE_INSTALL 'Yes' 348
$later = New-Choice $env:LATCHKEY_UPDATE_LATER 'Cancel' 180
$skip = New-Choice $env:LATCHKEY_UPDATE_SKIP 'Ignore' 12
$form.Controls.Add($label)
$form.Controls.Add($notes)
$form.AcceptButton = $install
$form.CancelButton = $later
switch ($form.ShowDialog()) { 'Yes' { 'install' } 'Ignore' { 'skip' } default { 'later' } }
`;

export function powershellDialog(offer: UpdateOffer, powershell: string): DialogCommand {
  return {
    file: powershell,
    args: ['-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-STA', '-EncodedCommand', Buffer.from(POWERSHELL_DIALOG, 'utf16le').toString('base64')],
    env: {
      LATCHKEY_UPDATE_TITLE: dialogTitle(offer),
      LATCHKEY_UPDATE_HEADLINE: headline(offer),
      LATCHKEY_UPDATE_NOTES: offer.releaseNotes,
      LATCHKEY_UPDATE_INSTALL: BUTTON_LABELS.install,
      LATCHKEY_UPDATE_LATER: BUTTON_LABELS.later,
      LATCHKEY_UPDATE_SKIP: BUTTON_LABELS.skip,
    },
    choice: (result) => {
      const answer = result.stdout.trim();
      return result.code === 0 && (answer === 'install' || answer === 'later' || answer === 'skip') ? answer : undefined;
    },
  };
}

/** Exit codes zenity documents: 1 for Cancel (or the extra button, whose label it prints), 5 for a timeout. */
const ZENITY_CANCEL = 1;
const ZENITY_TIMEOUT = 5;

/** Linux, GTK: a question with renamed buttons and an extra one; `--no-markup` shows the text as is. */
export function zenityDialog(file: string, offer: UpdateOffer): DialogCommand {
  return {
    file,
    args: [
      '--question',
      `--title=${dialogTitle(offer)}`,
      `--text=${dialogMessage(offer)}`,
      '--no-markup',
      `--ok-label=${BUTTON_LABELS.install}`,
      `--cancel-label=${BUTTON_LABELS.later}`,
      `--extra-button=${BUTTON_LABELS.skip}`,
      '--width=520',
    ],
    env: {},
    choice: (result) => {
      if (result.code === 0) return 'install';
      if (result.code === ZENITY_CANCEL) return result.stdout.trim() === BUTTON_LABELS.skip ? 'skip' : 'later';
      return result.code === ZENITY_TIMEOUT ? 'later' : undefined;
    },
  };
}

const KDIALOG_CHOICES: Record<number, PromptChoice> = { 0: 'install', 1: 'skip', 2: 'later' };

/** Linux, KDE: yes/no/cancel with renamed buttons. */
export function kdialogDialog(file: string, offer: UpdateOffer): DialogCommand {
  return {
    file,
    args: [
      '--title',
      dialogTitle(offer),
      '--yes-label',
      BUTTON_LABELS.install,
      '--no-label',
      BUTTON_LABELS.skip,
      '--cancel-label',
      BUTTON_LABELS.later,
      '--yesnocancel',
      asQtPlainText(dialogMessage(offer)),
    ],
    env: {},
    choice: (result) => (result.code === null ? undefined : KDIALOG_CHOICES[result.code]),
  };
}

/**
 * Qt guesses whether a message is rich text, so notes containing a tag would render as HTML. Rich
 * text it is, then, always: `<qt>` forces it, every character is escaped, and pre-wrap keeps the
 * line breaks and spaces, which shows the notes exactly as written.
 */
export function asQtPlainText(text: string): string {
  const escaped = text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<qt><p style="white-space:pre-wrap">${escaped}</p></qt>`;
}

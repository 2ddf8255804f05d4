/**
 * The default question: the OS's own dialog (osascript on macOS, PowerShell on Windows, zenity or
 * kdialog on a Linux desktop), else the user's terminal (never the app's stdin) when the process has
 * one, else "not right now".
 */
import { WINDOWS_POWERSHELL, windowsSystemProgram, type CommandRunner } from '../commands.js';
import { kdialogDialog, osascriptDialog, powershellDialog, zenityDialog, type DialogCommand } from './dialogs.js';
import type { UpdateOffer, UpdatePrompt } from './offer.js';
import { askAtTerminal, openTerminal, type TerminalIo } from './terminal.js';

export interface SystemPromptOptions {
  os: NodeJS.Platform;
  env: NodeJS.ProcessEnv;
  commands: CommandRunner;
  /** Opens the terminal to ask on; undefined when there is none. Default: `/dev/tty`, or the console on Windows. */
  terminal?: () => TerminalIo | undefined;
  logger?: { debug?(message: string, fields?: Record<string, unknown>): void };
}

async function dialogFor(offer: UpdateOffer, { os, env, commands }: SystemPromptOptions): Promise<DialogCommand | undefined> {
  if (os === 'darwin') return osascriptDialog(offer, '/usr/bin/osascript');
  if (os === 'win32') return powershellDialog(offer, windowsSystemProgram(env, WINDOWS_POWERSHELL));
  // A Linux (or BSD) desktop session; without one, no dialog tool can show anything.
  if (!env.DISPLAY && !env.WAYLAND_DISPLAY) return undefined;
  const zenity = await commands.find('zenity');
  if (zenity) return zenityDialog(zenity, offer);
  const kdialog = await commands.find('kdialog');
  return kdialog ? kdialogDialog(kdialog, offer) : undefined;
}

export function systemPrompt(options: SystemPromptOptions): UpdatePrompt {
  return {
    async ask(offer) {
      const dialog = await dialogFor(offer, options);
      if (dialog) {
        try {
          const choice = dialog.choice(await options.commands.run(dialog.file, dialog.args, { env: { ...options.env, ...dialog.env } }));
          if (choice) return choice;
          options.logger?.debug?.('the update dialog could not be shown', { tool: dialog.file });
        } catch (err) {
          options.logger?.debug?.('the update dialog could not be started', { tool: dialog.file, error: String(err) });
        }
      }
      const terminal = (options.terminal ?? (() => openTerminal(options.os)))();
      return terminal ? askAtTerminal(offer, terminal) : 'later';
    },
  };
}

/**
 * The detached helper of a Windows one-folder install. Windows refuses to rename a folder while a
 * process runs from it, so the app exits and this PowerShell script, started just before, waits for
 * its pid to be gone, renames the folder to `<folder>.old.<timestamp>` and the staged one into its
 * place (each rename retried 3 times with exponential backoff; a refused second rename puts the old
 * folder back, renamed or, refused too, copied), then starts the app again with the same arguments
 * in the same working folder (if its file is there: a start that fails leaves the next one to the
 * user), and deletes itself.
 *
 * The script is a constant: paths and arguments reach it through environment variables, never as
 * text inside it. A crash of the helper is settled by the app's next start (reconcile.ts).
 */

export const SWAP_HELPER_SCRIPT = `
$ErrorActionPreference = 'Stop'
$appPid = [int]$env:LATCHKEY_SWAP_PID
$target = $env:LATCHKEY_SWAP_TARGET
$old = $env:LATCHKEY_SWAP_OLD
$staged = $env:LATCHKEY_SWAP_STAGED
$retryMs = [int]$env:LATCHKEY_SWAP_RETRY_MS
$deadline = (Get-Date).AddSeconds([int]$env:LATCHKEY_SWAP_WAIT_SECONDS)
while (Get-Process -Id $appPid -ErrorAction SilentlyContinue) {
  if ((Get-Date) -gt $deadline) { exit 1 }
  Start-Sleep -Milliseconds 100
}
function Move-WithRetry($from, $to) {
  for ($attempt = 0; ; $attempt++) {
    try {
      [System.IO.Directory]::Move($from, $to)
      return $true
    } catch {
      if ($attempt -ge 3) { return $false }
      Start-Sleep -Milliseconds ($retryMs * [math]::Pow(2, $attempt))
    }
  }
}
if (Move-WithRetry $target $old) {
  if (-not (Move-WithRetry $staged $target)) {
    if (-not (Move-WithRetry $old $target)) {
      try { Copy-Item -LiteralPath $old -Destination $target -Recurse } catch { }
    }
  }
}
if (Test-Path -LiteralPath $env:LATCHKEY_SWAP_RELAUNCH -PathType Leaf) {
  $start = New-Object System.Diagnostics.ProcessStartInfo
  $start.FileName = $env:LATCHKEY_SWAP_RELAUNCH
  $start.Arguments = $env:LATCHKEY_SWAP_ARGUMENTS
  $start.WorkingDirectory = $env:LATCHKEY_SWAP_CWD
  $start.UseShellExecute = $false
  try { [System.Diagnostics.Process]::Start($start) | Out-Null } catch { }
}
Remove-Item -LiteralPath $PSCommandPath -ErrorAction SilentlyContinue
`;

/** How long the helper waits for the app to exit before giving up (the next start tidies up). */
export const HELPER_WAIT_SECONDS = 120;

/**
 * One argument quoted for a Windows command line, so that the program's C runtime
 * (CommandLineToArgvW rules) reads it back unchanged: quotes around anything with spaces or quotes,
 * a backslash before each quote, and doubled backslashes where they precede a quote.
 */
export function quoteWindowsArgument(argument: string): string {
  if (argument !== '' && !/[\s"]/.test(argument)) return argument;
  let quoted = '"';
  let backslashes = 0;
  for (const char of argument) {
    if (char === '\\') {
      backslashes++;
      continue;
    }
    quoted += char === '"' ? `${'\\'.repeat(backslashes * 2 + 1)}"` : `${'\\'.repeat(backslashes)}${char}`;
    backslashes = 0;
  }
  return `${quoted}${'\\'.repeat(backslashes * 2)}"`;
}

export const windowsCommandLine = (args: readonly string[]): string => args.map(quoteWindowsArgument).join(' ');
